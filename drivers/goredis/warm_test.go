package goredis

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// Warm, after the identity question made one connection, leaves warmConns
// connections idle in the pool of a node from Open (it dials one), does
// nothing when they are there, and the first lone call then takes one for
// its lane without a dial, and without the warmer making a spare; a
// node over a caller's client is not warmed, and a closed node's Warm is
// ErrClosed.
func TestWarmLeavesConnectionsIdle(t *testing.T) {
	s := redistest.NewServer(t)
	n := openNode(t, s.Addr())
	_, err := n.Identity(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, n.lanes.client.PoolStats().TotalConns)

	require.NoError(t, n.Warm(t.Context()))
	st := n.lanes.client.PoolStats()
	require.EqualValues(t, warmConns, st.TotalConns, "Warm dialed the connections missing")
	require.EqualValues(t, warmConns, st.IdleConns, "and left them idle")
	require.NoError(t, n.Warm(t.Context()))
	require.Equal(t, st.Misses, n.lanes.client.PoolStats().Misses, "a second Warm dialed")

	ok, err := n.SetNX(lone(t.Context()), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	n.warm.wg.Wait() // a spare the call had the warmer make, if any
	require.EqualValues(t, warmConns, n.lanes.client.PoolStats().TotalConns, "the first call after Warm dialed")

	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	theirs := New(rdb).(*node)
	require.NoError(t, theirs.Warm(t.Context()))
	require.Zero(t, rdb.PoolStats().TotalConns, "a caller's client was warmed")

	require.NoError(t, n.Close())
	require.ErrorIs(t, n.Warm(t.Context()), driver.ErrClosed)
}

// The first call sent alone after Warm goes out on a connection made: over
// a server whose every new connection answers only 1s after it was made
// (testproxy.FirstReplyDelay), with a network timeout of 500ms, on 40 fresh nodes at once,
// each asked its identity first (as redlock.Client.Connect does), then
// warmed. Without Warm, the warmer's background PING, which makes the spare
// at that first call, can take the one idle connection before the SET, which
// then dials and here fails with its deadline: this test failed 5 runs of 5
// (-race) with Warm left out, and one node at a time, behind a proxy of
// 300ms, 7 first SETs of 100 took that long. With Warm, the call finds the
// spare made, and the warmer starts none.
func TestWarmFirstCallDialsNot(t *testing.T) {
	addr := testproxy.New(t, redistest.NewServer(t).Addr(), testproxy.FirstReplyDelay(time.Second)).Addr()
	const nodes = 40
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		n := openNode(t, addr)
		wg.Go(func() {
			if _, errs[i] = n.Identity(t.Context()); errs[i] != nil {
				return
			}
			if errs[i] = n.Warm(t.Context()); errs[i] != nil {
				return
			}
			ctx := driver.WithNetworkTimeout(t.Context(), 500*time.Millisecond)
			_, errs[i] = n.SetNX(ctx, fmt.Sprintf("k%d", i), "v", time.Minute)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "node %d", i)
	}
}
