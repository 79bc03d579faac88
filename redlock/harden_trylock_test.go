package redlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Defect 13: concurrent TryLocks of one free key in one Client never all
// lose to a split vote: exactly one of them wins.
func TestConcurrentTryLocksOneWins(t *testing.T) {
	mem, nodes := memNodes(5)
	for _, m := range mem {
		m.SetLatency(time.Millisecond) // calls land on each node in their own order
	}
	c := newClient(t, nodes)
	for round := range 10 {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
			won   []*redlock.Lock
		)
		for range 50 {
			wg.Go(func() {
				<-start
				l, err := c.TryLock(t.Context(), "k")
				if err != nil {
					assert.ErrorIs(t, err, redlock.ErrNotObtained)
					return
				}
				mu.Lock()
				won = append(won, l)
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		require.Len(t, won, 1, "round %d: winners of 50 concurrent TryLocks of a free key", round)
		require.NoError(t, won[0].Unlock(t.Context()))
		require.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond)
	}
}
