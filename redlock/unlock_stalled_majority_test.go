package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// TestRedisUnlockWithEndedContext's scenario, in a bubble and for every
// pair of late SETs: a TryLock granted by a quorum while the SETs of two
// slow nodes are still in flight (answering within the node timeout, at it,
// or after it), 3 of 5 nodes then stalled as a server stopped with SIGSTOP
// (at once, within the node timeout or after it), and an Unlock with a
// context that has ended. At most two nodes can confirm the release: Unlock
// must return ErrLockLost, with the context's error. It checks it on plain
// nodes and on nodes that queue (batchedNode, as the Redis drivers do).
// (Once, that Unlock returned nil against real servers; see
// TestRedisUnlockWithEndedContext.)
func TestUnlockStalledMajorityAfterLateSets(t *testing.T) {
	lats := []time.Duration{time.Millisecond, 299 * time.Millisecond, 301 * time.Millisecond, 2 * time.Second}
	gaps := []time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond}
	for _, queued := range []bool{false, true} {
		t.Run(fmt.Sprintf("queued=%v", queued), func(t *testing.T) {
			for a := range 5 {
				for b := a + 1; b < 5; b++ {
					for _, lat := range lats {
						for _, gap := range gaps {
							unlockStalledMajority(t, queued, a, b, lat, gap)
						}
					}
				}
			}
		})
	}
}

// unlockStalledMajority runs one case of
// TestUnlockStalledMajorityAfterLateSets: nodes a and b answer after lat,
// and nodes 0-2 stall gap after the TryLock returned.
func unlockStalledMajority(t *testing.T, queued bool, a, b int, lat, gap time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		if queued {
			for i, m := range mem {
				nodes[i] = newBatchedNode(m)
			}
		}
		mem[a].SetLatency(lat)
		mem[b].SetLatency(lat)
		c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(300*time.Millisecond))
		ended, cancel := context.WithCancel(t.Context())
		cancel()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err, "late %d and %d after %v", a, b, lat)
		time.Sleep(gap)
		for _, m := range mem[:3] {
			m.SetStalled(true)
		}
		err = l.Unlock(ended)
		for _, m := range mem[:3] {
			m.SetStalled(false)
		}
		require.ErrorIs(t, err, redlock.ErrLockLost, "late %d and %d after %v, stalled %v after TryLock", a, b, lat, gap)
		require.ErrorIs(t, err, context.Canceled, "late %d and %d after %v, stalled %v after TryLock", a, b, lat, gap)
	})
}
