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

// A failed Extend of a shorter TTL than the validity left lowers Until (its
// PEXPIREs may land), and ExtendDone.Until says so: it is the lock's Until
// after the call, which the logger's validity_left is computed from, not the
// Until from before the call. Here one node extends, one refuses and one is
// down: no quorum, and not lost.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestFailedExtendEventUntilLowered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		rec := &recorder{id: t.Name()}
		c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithObserver(rec))
		ctx := context.Background()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return holders(mem, "k") == 3 }, 5*time.Second, time.Millisecond, "every node's SET applied")
		before := l.Until()
		mem[1].Delete("k")
		mem[2].SetDown(true)
		start := time.Now()
		err = l.Extend(ctx, 2*time.Second)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		rec.mu.Lock()
		require.Len(t, rec.extends, 1)
		d := rec.extends[0]
		rec.mu.Unlock()
		assert.False(t, d.Lost, "one refusal of three: not lost")
		assert.Equal(t, l.Until(), d.Until, "ExtendDone.Until is the lock's Until after the call")
		assert.True(t, d.Until.Before(before), "the failed Extend lowered Until from %v to %v", before, d.Until)
		assert.False(t, d.Until.After(start.Add(2*time.Second)), "to at most its start + ttl")
	})
}
