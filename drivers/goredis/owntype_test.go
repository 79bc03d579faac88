package goredis_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// ownClient is a client of the caller's own type, as an instrumenting
// wrapper would be: New cannot tell from it whether it follows redirections.
type ownClient struct{ redis.UniversalClient }

// movedOnce is an ownClient whose first command gets a MOVED reply
// without being sent, as one that a cluster client returns when a slot
// moved more often than it follows (a redirection left over).
type movedOnce struct {
	redis.UniversalClient
	done atomic.Bool
}

func (c *movedOnce) Process(ctx context.Context, cmd redis.Cmder) error {
	if c.done.CompareAndSwap(false, true) {
		err := errors.New("MOVED 1234 127.0.0.1:1")
		cmd.SetErr(err)
		return err
	}
	return c.UniversalClient.Process(ctx, cmd)
}

// A node of New over a client of the caller's type that is a client of one
// server of a Redis Cluster of two shards behaves as one over a
// *redis.Client does: a key of the server's slots locks, and MOVED (ASK,
// while the key's slot migrates) for another shard's key is an error
// matching driver.ErrClusterServer, which retrying cannot fix, so Lock stops
// at once. Before, the node left the reply as it was, a passing failure:
// Lock retried until its context ended. A client of the caller's type that
// wraps a *redis.ClusterClient locks the keys of both shards, and a
// redirection left over from it passes, as on a cluster node.
func TestNewOwnTypeOnClusterServer(t *testing.T) {
	cl := redistest.NewCluster(t, 2)
	s0, s1 := cl.Shards()[0], cl.Shards()[1]
	own, other := cl.KeyOn(s0, "own-"), cl.KeyOn(s1, "other-")
	one := func() driver.Node {
		rc := redis.NewClient(&redis.Options{Addr: s0.Primary().Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { rc.Close() })
		n := goredis.New(ownClient{rc})
		t.Cleanup(func() { n.Close() })
		return n
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	n := one()
	ok, err := n.SetNX(ctx, own, "v", time.Minute)
	require.NoError(t, err, "a key of the server's slots")
	require.True(t, ok)
	for i := range 2 { // asked, then known
		_, err = n.SetNX(ctx, other, "v", time.Minute)
		require.ErrorIs(t, err, driver.ErrClusterServer, "call %d", i)
		require.Equal(t, "MOVED", driver.PermanentCode(err), "call %d: %v", i, err)
	}

	c, err := redlock.New([]driver.Node{one()}, redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(2*time.Second))
	require.NoError(t, err)
	defer c.Close()
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	_, err = c.Lock(lctx, other)
	require.ErrorIs(t, err, driver.ErrClusterServer)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "Lock waited for its context: %v", err)
	require.NoError(t, lctx.Err(), "Lock returned when its context ended")

	// ASK, from the server whose slot migrates, for a key it does not have,
	// on a node whose first redirection it is.
	mig := cl.KeyOn(s0, "migrating-")
	m, err := cl.StartMigration(ctx, redistest.KeySlot(mig), s1)
	require.NoError(t, err)
	_, err = one().SetNX(ctx, mig, "v", time.Minute)
	require.ErrorIs(t, err, driver.ErrClusterServer)
	require.Equal(t, "ASK", driver.PermanentCode(err), "%v", err)
	require.NoError(t, m.Finish(ctx))

	// A wrapper of a cluster client: every key locks, and a redirection
	// left over passes.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	cn := goredis.New(&movedOnce{UniversalClient: cc})
	t.Cleanup(func() { cn.Close() })
	_, err = cn.SetNX(ctx, other, "w", time.Minute)
	require.ErrorContains(t, err, "MOVED 1234")
	require.NotErrorIs(t, err, driver.ErrClusterServer, "a redirection left over by a cluster client")
	require.Empty(t, driver.PermanentCode(err))
	for _, k := range []string{own + "-c", other + "-c", mig} {
		ok, err := cn.SetNX(ctx, k, "w", time.Minute)
		require.NoError(t, err, k)
		require.True(t, ok, k)
	}
}
