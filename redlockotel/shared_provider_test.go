package redlockotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Two Clients instrumented each on its own (Instrument at each Open, as the
// README shows) with one MeterProvider, on the same nodes: the gauges of a
// node add up over both, as they do for Clients that share one observer,
// rather than reporting whichever Client's callback ran last.
// Closing one leaves the other reported; closing both, neither.
func TestNodeQueueGaugesAddUpAcrossObservers(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	tel := newTelemetry(t)
	var clients []*redlock.Client
	for _, prefix := range []string{"a:", "b:"} {
		c, err := redlock.Open("goredis", redistest.Addrs(servers), tel.option(), redlock.WithKeyPrefix(prefix),
			redlock.WithTTL(20*time.Second), redlock.WithNodeTimeout(3*time.Second))
		require.NoError(t, err)
		defer c.Close()
		connectAll(t, c)
		clients = append(clients, c)
	}
	stopped := servers[0]
	require.NoError(t, stopped.Pause())
	defer stopped.Resume()
	queueOn(t, clients, func(n int) int { return 8 * (n + 1) }) // depths that differ: 8 and 16
	depthOf := func(c *redlock.Client) int64 { return depthOn(c, stopped.Addr()) }
	a, b := depthOf(clients[0]), depthOf(clients[1])
	require.Positive(t, a)
	require.Positive(t, b)
	got, points := pendingOn(t, tel, stopped.Addr())
	require.Equal(t, [2]int64{a, b}, [2]int64{depthOf(clients[0]), depthOf(clients[1])}, "the queues moved while read")
	assert.Equal(t, 1, points, "one point for the node")
	assert.Equal(t, a+b, got, "the stopped node's depth over both Clients (%d and %d)", a, b)

	// The first Client closed, the second's observer still reports it.
	require.NoError(t, clients[0].Close())
	got, _ = pendingOn(t, tel, stopped.Addr())
	assert.Equal(t, depthOf(clients[1]), got, "the stopped node's depth, the second Client's alone")

	require.NoError(t, stopped.Resume())
	require.NoError(t, clients[1].Close())
	assert.Empty(t, gauge[int64](t, tel.metrics(t)["redlock.node.pending"]), "closed Clients are not read")
}
