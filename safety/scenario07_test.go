package safety_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// write is one write to the protected resource.
type write struct {
	holder, value string
	at            time.Time
}

// unprotectedResource is what a lock protects when nothing checks who writes:
// it accepts every write. Most resources are like this; a resource that
// checks fencing tokens would reject the stale holder's write.
type unprotectedResource struct {
	mu     sync.Mutex
	writes []write
}

// Write records w and accepts it.
func (r *unprotectedResource) Write(holder, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, write{holder, value, time.Now()})
	return nil
}

// history returns the writes accepted, in order.
func (r *unprotectedResource) history() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]write(nil), r.writes...)
}

// Scenario 7: a holder paused past its validity. Client A holds the lock,
// writes, then stops (a GC pause, SIGSTOP, swap) for longer than its
// validity: here it waits on a channel until B has taken the lock and
// written. The lock did its job (B got it only after A's keys expired, and
// A's Extend and Unlock report ErrLockLost without touching B's lock), but A
// still acts on its belief when it wakes: its late write reaches the
// resource and overwrites B's. No lock service can prevent that; only the
// resource can, by rejecting a stale fencing token.
func TestScenario07PausedHolderLateWriteReachesUnprotectedResource(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ns := startNodes(t, 5)
			key := "paused-holder"
			res := &unprotectedResource{}
			a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond))
			b := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond))
			warm(t, a)
			warm(t, b)

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			la, err := a.Lock(ctx, key)
			require.NoError(t, err)
			require.NoError(t, res.Write("A", "a1"))

			bHolds := make(chan *redlock.Lock, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
				defer cancel()
				lb, err := b.Lock(ctx, key) // succeeds once A's keys expire
				if err == nil {
					err = res.Write("B", "b1")
				}
				if err != nil {
					t.Error(err)
					close(bHolds)
					return
				}
				bHolds <- lb
			}()

			// A is paused: it does nothing until B holds the lock.
			lb, ok := <-bHolds
			require.True(t, ok, "B must get the lock after A's expired")
			woke := time.Now()
			require.True(t, woke.After(la.Until()), "A wakes after its validity ended")
			require.True(t, woke.Before(lb.Until()), "while B holds the lock")

			// A acts on its stale belief: the resource cannot tell.
			require.NoError(t, res.Write("A", "a2"), "an unprotected resource accepts the stale holder's write")
			h := res.history()
			require.Len(t, h, 3)
			require.Equal(t, []string{"A", "B", "A"}, []string{h[0].holder, h[1].holder, h[2].holder})
			require.Equal(t, "a2", h[2].value, "A's late write overwrote B's")
			require.True(t, h[2].at.Before(lb.Until()), "A's write landed inside B's validity")
			measured(t, "paused holder, %s: A woke %v after its Until; its late write was accepted %v after B's, inside B's lock",
				d, woke.Sub(la.Until()).Round(time.Millisecond), h[2].at.Sub(h[1].at).Round(time.Millisecond))

			// The lock itself stays correct.
			require.ErrorIs(t, la.Extend(t.Context(), ttl), redlock.ErrLockLost)
			require.ErrorIs(t, la.Unlock(t.Context()), redlock.ErrLockLost)
			require.NoError(t, lb.Extend(t.Context(), ttl), "A's Unlock must not release B's lock")
			require.NoError(t, lb.Unlock(t.Context()))
		})
	}
}
