package safety_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// TestDriversFarNodeKeepsUp runs 16 lockers for two seconds over three nodes,
// one of them 40ms away (round trip), and watches the far node's local queue
// in the second second, once the node has learned its round trip. The quorum
// of the two near nodes decides every Lock and Unlock; the far node still
// gets every SET and release, about eight thousand commands a second here.
// A node that let a fixed number of commands in flight whatever the distance
// (64 handed to rueidis at once: 1,600 commands a second at 40ms) fell
// behind, and its queue, each call on a goroutine, grew for as long as the
// load lasted: 4,100–5,700 deep with rueidis and valkeygo before batch.Gate
// scaled by the round trip, none since. goredis and redigo, two batches of
// up to 128 at once, kept up at this load either way (100–230 deep); their
// scaling is checked by batch's TestBatcherScalesByRoundTrip.
func TestDriversFarNodeKeepsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("far node: seconds per driver")
	}
	const (
		rtt     = 40 * time.Millisecond
		lockers = 16
		load    = 2 * time.Second
		// maxDepth is far above what a node that keeps up queues (a
		// round trip's worth of commands at most, a few hundred) and far
		// below what one held to a fixed number fell behind by at this
		// load (thousands).
		maxDepth = 1000
	)
	ns := startNodes(t, 3)
	require.NoError(t, ns.proxies[2].SetLatency(rtt/2, rtt/2))
	for _, drv := range redisDrivers {
		t.Run(drv, func(t *testing.T) {
			nodes := make([]driver.Node, len(ns.proxies))
			for i, addr := range ns.addrs() {
				n, err := driverOf[drv].Open(addr)
				require.NoError(t, err)
				nodes[i] = n
			}
			far, ok := nodes[2].(driver.Queuer)
			require.True(t, ok, "%s nodes report their queue", drv)
			// A node timeout that the near nodes' calls do not exhaust
			// on a loaded machine under -race: with the default (200ms),
			// under two CPU hogs, releases timed out on them ("i/o
			// timeout"), and Unlocks failed, in 2 runs of 16. A node
			// that does not keep up only falls further behind with it:
			// its calls wait longer before they give up.
			c, err := redlock.New(nodes, redlock.WithNodeTimeout(time.Second))
			require.NoError(t, err)
			defer c.Close()
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), load)
			defer cancel()
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				ops      int
				failures []error
			)
			for g := range lockers {
				wg.Go(func() {
					key := fmt.Sprintf("far/%s/%d", drv, g)
					for ctx.Err() == nil {
						l, err := c.Lock(ctx, key)
						if err == nil {
							err = l.Unlock(context.WithoutCancel(ctx))
						}
						mu.Lock()
						if err != nil && ctx.Err() == nil {
							failures = append(failures, err)
						} else if err == nil {
							ops++
						}
						mu.Unlock()
					}
				})
			}
			deepest := 0
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
		watch:
			for {
				select {
				case <-ctx.Done():
					break watch
				case now := <-tick.C:
					if now.Sub(start) >= load/2 { // after the node learned its round trip
						deepest = max(deepest, far.Pending().Depth)
					}
				}
			}
			wg.Wait()
			require.Empty(t, failures, "every Lock and Unlock decided by the near nodes succeeds")
			t.Logf("%s: %d lock+unlock in %v, the far node's queue at most %d deep in the second half", drv, ops, load, deepest)
			require.Less(t, deepest, maxDepth, "the far node's queue keeps up (%d lock+unlock, %.0f commands a second to it)",
				ops, float64(2*ops)/load.Seconds())
		})
	}
}
