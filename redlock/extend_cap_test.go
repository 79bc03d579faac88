package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// An Extend whose quorum said yes, but whose validity, capped by an earlier
// Extend's call that failed (it may still land), has already passed when it
// decides, fails with ErrLockLost: it does not return success for a lock
// that is over.
func TestExtendCappedPastItsEndFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(200*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // every node has its SET

		// A short Extend with one failed node call: later Extends count
		// on no more than its 100ms from their start.
		mem[2].SetDown(true)
		require.NoError(t, l.Extend(t.Context(), 100*time.Millisecond))
		mem[2].SetDown(false)
		time.Sleep(10 * time.Millisecond)

		// A long Extend whose calls take 150ms...
		for _, m := range mem {
			m.SetLatency(150 * time.Millisecond)
		}
		slow := make(chan error, 1)
		go func() { slow <- l.Extend(t.Context(), 10*time.Second) }()
		synctest.Wait()
		for _, m := range mem {
			m.SetLatency(0)
		}
		// ...and another, 60ms later, answered at once, which keeps the
		// lock valid past the first one's capped end.
		time.Sleep(60 * time.Millisecond)
		require.NoError(t, l.Extend(t.Context(), 10*time.Second))

		err = <-slow
		if err == nil {
			assert.True(t, time.Now().Before(l.Until()), "Extend succeeded, so the lock is valid")
			return
		}
		assert.ErrorIs(t, err, redlock.ErrLockLost)
		select {
		case <-l.Done():
		default:
			t.Error("Extend failed for want of validity, and the lock is not over")
		}
	})
}

// An Extend given a context that has ended sends nothing and changes
// nothing: Until stays, and later Extends are not capped by its TTL.
func TestExtendWithEndedContextChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		until := l.Until()
		ended, cancel := context.WithCancel(t.Context())
		cancel()
		err = l.Extend(ended, 100*time.Millisecond)
		assert.ErrorIs(t, err, redlock.ErrLockLost)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, until, l.Until(), "Until unchanged")
		time.Sleep(time.Second)
		require.NoError(t, l.Extend(t.Context(), 10*time.Second))
		assert.Greater(t, time.Until(l.Until()), 9*time.Second, "a later Extend gets its whole TTL")
	})
}
