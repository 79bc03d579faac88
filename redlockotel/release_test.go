package redlockotel_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/redlockotel"
)

// An observer made for each Client (Instrument at each Open) is not kept by
// the MeterProvider once its Clients are closed: the gauges' callback is
// registered only while it watches a Client.
func TestObserverOfClosedClientsIsReleased(t *testing.T) {
	tel := newTelemetry(t)
	var freed atomic.Int32
	const n = 20
	for i := range n {
		o := redlockotel.NewObserver(redlockotel.WithTracerProvider(tel.tp), redlockotel.WithMeterProvider(tel.mp))
		runtime.SetFinalizer(o, func(any) { freed.Add(1) })
		c, err := redlock.Open("memory", []string{fmt.Sprint("rel-a", i), fmt.Sprint("rel-b", i), fmt.Sprint("rel-c", i)}, redlock.WithObserver(o))
		require.NoError(t, err)
		require.NoError(t, c.Close())
	}
	assert.Eventually(t, func() bool {
		runtime.GC()
		return freed.Load() == n
	}, 5*time.Second, 10*time.Millisecond, "observers of closed Clients freed: %d of %d", freed.Load(), n)
}

// One observer given to a Client, then, once that is closed, to another:
// the queues' gauges report the second, as they did the first.
func TestObserverGaugesAfterClientsCome(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL()
	}
	tel := newTelemetry(t)
	o := redlockotel.NewObserver(redlockotel.WithTracerProvider(tel.tp), redlockotel.WithMeterProvider(tel.mp))
	stopped := servers[0]
	pending := func() int64 {
		v, _ := pendingOn(t, tel, stopped.Addr())
		return v
	}
	for round := range 2 {
		c, err := redlock.Open("goredis", urls, redlock.WithObserver(o), redlock.WithNodeTimeout(2*time.Second))
		require.NoError(t, err)
		connectAll(t, c) // connections made while every node answers, none left in flight
		require.NoError(t, stopped.Pause())
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				if l, err := c.TryLock(t.Context(), fmt.Sprint("k", i)); err == nil {
					_ = l.Unlock(t.Context())
				}
			})
		}
		// Read while the calls wait: two sends to the stopped server
		// hold its batcher's senders for the node timeout, and the
		// calls that come meanwhile queue. A single read after the
		// TryLocks returned could come once the queue was sent (a
		// loaded machine's TryLocks taking more than the timeout). The
		// Client's own depth (Client.Queues) is read beside it, to tell
		// a gauge that missed a queue from a queue that never formed.
		var queued, direct int64
		for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
			direct = max(direct, depthOn(c, stopped.Addr()))
			if queued = pending(); queued > 0 {
				break
			}
		}
		wg.Wait()
		assert.Positive(t, queued, "round %d: the stopped node's queue (the Client's own depth reached %d)", round, direct)
		require.NoError(t, stopped.Resume())
		require.NoError(t, c.Close())
		assert.Zero(t, pending(), "round %d: a closed Client is not read", round)
	}
}
