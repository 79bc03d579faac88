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

// A lock whose validity ends while an Extend is in flight (its nodes stalled),
// none having failed since the grant, has that as its LockEnd.Err
// (Lock.expireLocked), however its end is noticed: by Done's timer when Done
// was called before Until, or by the first call of Done after Until. Before,
// that first call ended the lock with its own copy of endLocked, without the
// cause: LockEnd.Err was nil, as for an expiry with no extension in flight.
func TestDoneAfterUntilWithExtendInFlightSaysWhy(t *testing.T) {
	for _, first := range []string{"before Until", "after Until"} {
		t.Run("Done first called "+first, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const ttl, nodeTimeout = time.Second, 200 * time.Millisecond
				mem, nodes := memNodes(3)
				obs := &lockEnds{}
				c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout), redlock.WithObserver(obs))
				ctx := context.Background()
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				if first == "before Until" {
					l.Done()
				}
				time.Sleep(time.Until(l.Until()) - 50*time.Millisecond)
				for _, m := range mem {
					m.SetStalled(true)
				}
				extended := make(chan error, 1)
				go func() { extended <- l.Extend(ctx, ttl) }()
				time.Sleep(60 * time.Millisecond) // past Until; the Extend waits for its node timeout
				select {
				case <-l.Done():
				default:
					t.Fatal("Done not closed after Until")
				}
				for _, m := range mem {
					m.SetStalled(false)
				}
				require.ErrorIs(t, <-extended, redlock.ErrLockLost)
				e := obs.only(t)
				require.Equal(t, redlock.EndExpired, e.How)
				require.ErrorIs(t, e.Err, redlock.ErrLockLost, "LockEnd.Err: %v", e.Err)
				require.Contains(t, fmt.Sprint(e.Err), "its validity ended while an extension was still in flight")
				require.NoError(t, l.Unlock(ctx)) // the nodes kept the key: the stalled PEXPIREs landed
			})
		})
	}
}
