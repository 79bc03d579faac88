package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// reshard closes a Ring's shard client (SetAddrs) the first time a command
// reaches it: the command then fails with redis.ErrClosed, though the Ring,
// the user's client, is open and serves the key on its new shard.
type reshard struct {
	once  sync.Once
	do    func()
	fired bool
}

func (h *reshard) DialHook(next goredislib.DialHook) goredislib.DialHook { return next }

func (h *reshard) ProcessHook(next goredislib.ProcessHook) goredislib.ProcessHook {
	return func(ctx context.Context, cmd goredislib.Cmder) error {
		h.once.Do(h.do)
		return next(ctx, cmd)
	}
}

func (h *reshard) ProcessPipelineHook(next goredislib.ProcessPipelineHook) goredislib.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredislib.Cmder) error {
		h.once.Do(h.do)
		return next(ctx, cmds)
	}
}

// A go-redis Ring closes the clients of the shards that SetAddrs removes: a
// command in flight on one fails with redis.ErrClosed, though the Ring is
// open and the next attempt reaches the new shard. Lock must retry, not stop
// with "retrying cannot fix".
func TestRedisLockOverReshardedRing(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	ring := goredislib.NewRing(&goredislib.RingOptions{
		Addrs:                 map[string]string{"a": servers[0].Addr()},
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		HeartbeatFrequency:    time.Hour,
	})
	t.Cleanup(func() { ring.Close() })
	h := &reshard{}
	h.do = func() { h.fired = true; ring.SetAddrs(map[string]string{"b": servers[1].Addr()}) }
	require.NoError(t, ring.ForEachShard(t.Context(), func(_ context.Context, rdb *goredislib.Client) error {
		rdb.AddHook(h) // the only shard: servers[0]
		return nil
	}))
	c, err := redlock.New([]driver.Node{goredis.New(ring)})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, "k")
	fired := false
	h.once.Do(func() {})
	fired = h.fired
	require.True(t, fired, "the shard was not replaced")
	require.NoError(t, err, "Lock over a Ring whose shard was replaced")
	require.NoError(t, l.Unlock(t.Context()))
}

// A Ring or a cluster client (go-redis's, rueidis's) that its user closed
// still makes Lock and Do stop at once: the node asks the client itself,
// which says it is closed.
func TestRedisLockOverClosedRingAndCluster(t *testing.T) {
	t.Run("ring", func(t *testing.T) {
		s := redistest.NewServers(t, 1)[0]
		ring := goredislib.NewRing(&goredislib.RingOptions{
			Addrs:                 map[string]string{"a": s.Addr()},
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
		})
		requireStopsOnceClosed(t, []driver.Node{goredis.New(ring)}, func() { require.NoError(t, ring.Close()) })
	})
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.NewCluster(t, 2)
		cc := goredislib.NewClusterClient(&goredislib.ClusterOptions{
			Addrs:                 cl.Seeds(),
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
		})
		requireStopsOnceClosed(t, []driver.Node{goredis.New(cc)}, func() { require.NoError(t, cc.Close()) })
	})
	t.Run("rueidis cluster", func(t *testing.T) {
		cl := redistest.NewCluster(t, 2)
		rc, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: cl.Seeds(), DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		requireStopsOnceClosed(t, []driver.Node{rueidis.New(rc)}, func() {
			// The cluster client closes its connections in goroutines
			// of its own: a command may still pass for a moment.
			rc.Close()
			require.Eventually(t, func() bool {
				return errors.Is(rc.Do(t.Context(), rc.B().Ping().Build()).Error(), rueidislib.ErrClosing)
			}, 5*time.Second, 10*time.Millisecond, "the closed client still answers")
		})
	})
}
