package goredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// A cluster node opened while one shard's primary hangs (paused: it takes
// connections and never answers, as a frozen host does) locks the keys of
// the other shards, once it has the slot map (from a seed that answers: a
// hung seed holds up go-redis' first reading of the slot map, as it does
// every client's). go-redis' ClusterClient, before its first command, asked
// up to three random nodes for COMMAND (the commands' key positions for its
// routing policies), bounded by five seconds of its own rather than the
// caller's context and under a lock every command waits on: a hung shard
// picked first failed the SET of a key on a healthy shard (context deadline
// exceeded) on most new nodes, and every command of the node after it, until
// a COMMAND succeeded, on a node of Open or New alike. The node's commands
// now carry what go-redis read from COMMAND (their key step).
func TestClusterHungShardSparesOtherShards(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	healthy, hung := c.Shards()[0], c.Shards()[1]
	key := func(i int) string { return c.KeyOn(healthy, fmt.Sprintf("hung-shard-%d-", i)) }
	require.NoError(t, hung.Primary().Pause())
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			// The healthy shard's primary alone as the seed: the slot
			// map comes from it.
			var n driver.Node
			if i%2 == 0 {
				var err error
				n, err = goredis.Driver{}.Open("redis://" + healthy.Primary().Addr() + "?cluster=true")
				if !assert.NoError(t, err) {
					return
				}
			} else { // a client of the user's, configured as New says
				cc := redis.NewClusterClient(&redis.ClusterOptions{
					Addrs:                 []string{healthy.Primary().Addr()},
					ContextTimeoutEnabled: true,
					MaxRetries:            -1,
				})
				defer cc.Close()
				n = goredis.New(cc)
			}
			defer n.Close()
			for j := range 3 {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				set, err := n.SetNX(ctx, key(i), "v", time.Minute)
				cancel()
				if !assert.NoError(t, err, "node %d, SET NX %d on a key of the healthy shard while the other hangs", i, j) || !assert.True(t, set) {
					return
				}
				ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second)
				released, err := n.EvalRelease(ctx, key(i), "v")
				cancel()
				if !assert.NoError(t, err, "node %d, release %d", i, j) || !assert.True(t, released) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// A cluster node keeps locking the keys of its healthy shards while one
// shard's primary hangs (paused after the node connected) and calls keep
// arriving for the hung shard's keys, each with a long context (3s): those
// calls must not hold the node's connections, so that a call of 500ms on a
// healthy shard's key waits behind them in the node's queue and fails. On a
// node of Open, the calls carry a network timeout as package redlock gives a
// driver.Queuer's (the node timeout, here as long as the context); on a node
// of New, a deadline alone. The hung shard's calls fail with an error that
// names its primary.
func TestClusterHungShardUnderLoad(t *testing.T) {
	for _, how := range []string{"Open", "New"} {
		t.Run(how, func(t *testing.T) {
			c := redistest.NewCluster(t, 2)
			healthy, hung := c.Shards()[0], c.Shards()[1]
			keyOn := func(s *redistest.Shard, prefix string, i int) string {
				return c.KeyOn(s, fmt.Sprintf("%s-%d-", prefix, i))
			}
			var n driver.Node
			var withTimeout func(d time.Duration) (context.Context, context.CancelFunc)
			if how == "Open" {
				var err error
				n, err = goredis.Driver{}.Open(c.URL())
				require.NoError(t, err)
				withTimeout = func(d time.Duration) (context.Context, context.CancelFunc) {
					return context.WithTimeout(driver.WithNetworkTimeout(t.Context(), d), d)
				}
			} else {
				cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
				t.Cleanup(func() { cc.Close() })
				n = goredis.New(cc)
				withTimeout = func(d time.Duration) (context.Context, context.CancelFunc) {
					return context.WithTimeout(t.Context(), d)
				}
			}
			t.Cleanup(func() { n.Close() })
			for _, s := range []*redistest.Shard{healthy, hung} { // connected to both
				ctx, cancel := withTimeout(10 * time.Second)
				ok, err := n.SetNX(ctx, keyOn(s, "connect", 0), "v", time.Minute)
				cancel()
				require.NoError(t, err)
				require.True(t, ok)
			}
			require.NoError(t, hung.Primary().Pause())
			t.Cleanup(func() { hung.Primary().Resume() }) // first: the calls left behind end

			defer callHung(t, n, withTimeout, func(g, i int) string { return keyOn(hung, fmt.Sprintf("hung-%d", g), i) },
				func(err error) {
					assert.ErrorContains(t, err, "primary "+hung.Primary().Addr()+":", "SET NX on the hung shard: an error that names its primary")
				})()
			succeeded := 0
			for i := range 10 {
				start := time.Now()
				ctx, cancel := withTimeout(500 * time.Millisecond)
				ok, err := n.SetNX(ctx, keyOn(healthy, "healthy", i), "v", time.Minute)
				cancel()
				elapsed := time.Since(start)
				require.Less(t, elapsed, 2*time.Second, "SET NX %d on the healthy shard, with 500ms", i)
				if err == nil && ok {
					succeeded++
				} else {
					t.Logf("SET NX %d on the healthy shard, after %v: %v, %v", i, elapsed.Round(time.Millisecond), ok, err)
				}
			}
			require.Equal(t, 10, succeeded, "SET NX on the healthy shard while calls wait on the hung one")
		})
	}
}

// A cluster node first used while one shard's primary hangs (paused before
// the node's first call) locks the keys of the other shards, as it does once
// it has the slot map: calls keep arriving for the hung shard's keys, each
// with a long context (3s), and they must not hold up the calls of 1s on
// the healthy shards' keys (each reads the slot map or waits for it, dials
// and sends; 1s is room for a loaded machine). The seeds are the healthy shards' primaries, so
// that the slot map can be read off the hung shard. The node once routed a
// call to its shard's queue only after its first reply, and until then sent
// every call through one queue: the hung shard's calls took its two senders
// (no reply came), and the healthy shards' calls waited behind them and
// failed at their contexts' end. On a node of Open, the calls carry a
// network timeout as package redlock gives a driver.Queuer's; on a node of
// New, a deadline alone.
func TestClusterFirstUseWhileShardHangs(t *testing.T) {
	for _, how := range []string{"Open", "New"} {
		t.Run(how, func(t *testing.T) {
			c := redistest.NewCluster(t, 3)
			hung := c.Shards()[2]
			healthy := c.Shards()[:2]
			keyOn := func(s *redistest.Shard, prefix string, i int) string {
				return c.KeyOn(s, fmt.Sprintf("%s-%d-", prefix, i))
			}
			require.NoError(t, hung.Primary().Pause())
			seeds := []string{healthy[0].Primary().Addr(), healthy[1].Primary().Addr()}
			var n driver.Node
			var withTimeout func(d time.Duration) (context.Context, context.CancelFunc)
			if how == "Open" {
				var err error
				n, err = goredis.Driver{}.Open("redis://" + seeds[0] + "?cluster=true&addr=" + seeds[1])
				require.NoError(t, err)
				withTimeout = func(d time.Duration) (context.Context, context.CancelFunc) {
					return context.WithTimeout(driver.WithNetworkTimeout(t.Context(), d), d)
				}
			} else {
				cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ContextTimeoutEnabled: true, MaxRetries: -1})
				t.Cleanup(func() { cc.Close() })
				n = goredis.New(cc)
				withTimeout = func(d time.Duration) (context.Context, context.CancelFunc) {
					return context.WithTimeout(t.Context(), d)
				}
			}
			t.Cleanup(func() { n.Close() })
			t.Cleanup(func() { hung.Primary().Resume() }) // first: the calls left behind end

			defer callHung(t, n, withTimeout, func(g, i int) string { return keyOn(hung, fmt.Sprintf("hung-%d", g), i) },
				func(err error) { assert.Error(t, err, "SET NX on the hung shard") })()
			// The hung shard's calls fill the senders they may use, and
			// the next ones queue.
			q := n.(driver.Queuer)
			for start := time.Now(); q.Pending().Depth == 0; time.Sleep(time.Millisecond) {
				require.Less(t, time.Since(start), 5*time.Second, "no call of the hung shard queued")
			}
			succeeded := 0
			for i := range 10 {
				s := healthy[i%2]
				start := time.Now()
				ctx, cancel := withTimeout(time.Second)
				ok, err := n.SetNX(ctx, keyOn(s, "healthy", i), "v", time.Minute)
				cancel()
				elapsed := time.Since(start)
				require.Less(t, elapsed, 2*time.Second, "SET NX %d on healthy shard %d, with 1s", i, s.Index())
				if err == nil && ok {
					succeeded++
				} else {
					t.Logf("SET NX %d on healthy shard %d, after %v: %v, %v", i, s.Index(), elapsed.Round(time.Millisecond), ok, err)
				}
			}
			require.Equal(t, 10, succeeded, "SET NX on the healthy shards of a node first used while a shard hangs")
		})
	}
}

// callHung keeps 8 goroutines calling SET NX, each with a context of 3s, on
// the keys that key gives (by goroutine and call), which are a hung shard's,
// and checks each call's error with check, until the function it returns is
// called; that function waits for the goroutines to end.
func callHung(t *testing.T, n driver.Node, withTimeout func(time.Duration) (context.Context, context.CancelFunc), key func(g, i int) string, check func(error)) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := withTimeout(3 * time.Second)
				_, err := n.SetNX(ctx, key(g, i), "v", time.Minute)
				cancel()
				check(err)
			}
		})
	}
	return func() { close(done); wg.Wait() }
}
