package goredis

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// openNode opens a node from Open for addr, closed when the test ends.
func openNode(t *testing.T, addr string) *node {
	t.Helper()
	dn, err := Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { dn.Close() })
	return dn.(*node)
}

// laneOn opens a node on addr and sends it one lone call (SET of "warm"),
// which makes its lane; it returns the node and the lone calls' context.
func laneOn(t *testing.T, addr string) (*node, context.Context) {
	t.Helper()
	n := openNode(t, addr)
	ctx := lone(t.Context())
	ok, err := n.SetNX(ctx, "warm", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, n.lanes.idle.Load(), "the lone call left its lane idle")
	return n, ctx
}

// lone makes a lone call with the Redlock node timeout as its network
// timeout, as a round does.
func lone(ctx context.Context) context.Context {
	return driver.WithNetworkTimeout(ctx, 250*time.Millisecond)
}

// poolGets counts the connections the node's pool has lent.
func poolGets(n *node) uint32 {
	s := n.client.PoolStats()
	return s.Hits + s.Misses
}

func TestLaneCarriesLoneCalls(t *testing.T) {
	n := openNode(t, redistest.NewServer(t).Addr())
	ctx := lone(t.Context())
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, n.lanes.idle.Load(), "no lane after a lone call")
	before := poolGets(n)
	for range 10 {
		ok, err := n.EvalRelease(ctx, "k", "v")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = n.SetNX(ctx, "k", "v", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Equal(t, before, poolGets(n), "lone calls took connections from the pool beside the lane")
}

// A lone call that times out may leave its reply unread on the lane's
// connection: the lane is closed, and the next call reads its own reply on
// another connection, never the late one.
func TestLaneDroppedAfterTimeout(t *testing.T) {
	srv := redistest.NewServer(t)
	n, ctx := laneOn(t, srv.Addr())
	require.NoError(t, srv.Pause())
	paused := true
	t.Cleanup(func() {
		if paused {
			srv.Resume()
		}
	})
	_, err := n.SetNX(driver.WithNetworkTimeout(t.Context(), 50*time.Millisecond), "late", "v", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, n.lanes.made.Load(), "the lane was kept after its call timed out")
	require.NoError(t, srv.Resume())
	paused = false
	// The late SET's reply is "OK"; Extend of a key that is not held must
	// read its own reply, 0.
	ok, err := n.Extend(ctx, "missing", "v", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "Extend of a key not held said it extended it: a late reply was read")
	require.NotNil(t, n.lanes.idle.Load(), "no new lane after the next call")
}

// An error reply closes the lane too (go-redis marks the connection bad
// after some, READONLY among them); the next call works, on a new lane.
func TestLaneClosedAfterErrorReply(t *testing.T) {
	srv := redistest.NewServer(t)
	n := openNode(t, srv.Addr())
	_, err := srv.Do(t.Context(), "HSET", "hash", "f", "v")
	require.NoError(t, err)
	ctx := lone(t.Context())
	_, err = n.EvalRelease(ctx, "hash", "v") // GET of a hash: WRONGTYPE
	require.ErrorContains(t, err, "WRONGTYPE")
	require.False(t, n.lanes.made.Load(), "the lane was kept after an error reply")
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, n.lanes.idle.Load(), "no new lane after the next call")
}

// A lane left idle for laneIdle goes back to the pool, which checks a
// connection's health before it lends it.
func TestLaneIdleGoesBackToPool(t *testing.T) {
	n := openNode(t, redistest.NewServer(t).Addr())
	ctx := lone(t.Context())
	_, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	idle := n.client.PoolStats().IdleConns
	l, _ := n.lanes.take(time.Now().Add(laneIdle))
	require.Nil(t, l, "a lane idle for laneIdle was used")
	require.False(t, n.lanes.made.Load())
	require.Equal(t, idle+1, n.client.PoolStats().IdleConns, "the lane's connection did not go back to the pool")
	l, fresh := n.lanes.take(time.Now())
	require.NotNil(t, l)
	require.True(t, fresh, "the next lane is a new one")
	n.lanes.give(l, false, nil)
}

// Close closes the idle lane, and a lane that a call holds once the call
// gives it back.
func TestLaneClosedWithTheNode(t *testing.T) {
	n := openNode(t, redistest.NewServer(t).Addr())
	_, err := n.SetNX(lone(t.Context()), "k", "v", time.Minute)
	require.NoError(t, err)
	l, _ := n.lanes.take(time.Now())
	require.NotNil(t, l)
	require.NoError(t, n.Close())
	n.lanes.give(l, false, nil)
	require.Nil(t, n.lanes.idle.Load(), "a lane given back after Close was kept")
	require.False(t, n.lanes.made.Load())

	n = openNode(t, redistest.NewServer(t).Addr())
	_, err = n.SetNX(lone(t.Context()), "k", "v", time.Minute)
	require.NoError(t, err)
	require.NoError(t, n.Close())
	require.Nil(t, n.lanes.idle.Load(), "Close kept the idle lane")
	require.False(t, n.lanes.made.Load())
}
