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

// A Lock.TTL whose answers leave no validity (Until lowered into the past)
// while an Extend is in flight, none having failed since the grant, ends the
// lock with that as its cause, as every other end at the validity's end does
// (Lock.expireLocked). Before, setUntilLocked ended it with endLocked alone:
// LockEnd.Err nil.
func TestTTLEndsValidityWithExtendInFlightSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl, lat = time.Second, 50 * time.Millisecond
		mem, nodes := memNodes(3)
		obs := &lockEnds{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithObserver(obs))
		ctx := context.Background()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		time.Sleep(900 * time.Millisecond)
		for _, m := range mem {
			m.SetLatency(lat)
		}
		extended := make(chan error, 1)
		go func() {
			time.Sleep(time.Millisecond) // after TTL began
			extended <- l.Extend(ctx, ttl)
		}()
		_, err = l.TTL(ctx) // read at 950ms: 50ms left, less the call and the drift: Until 938ms, past
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, <-extended, redlock.ErrLockLost)
		e := obs.only(t)
		require.Equal(t, redlock.EndExpired, e.How)
		require.ErrorIs(t, e.Err, redlock.ErrLockLost, "LockEnd.Err: %v", e.Err)
		require.Contains(t, fmt.Sprint(e.Err), "its validity ended while an extension was still in flight")
		for _, m := range mem {
			m.SetLatency(0)
		}
	})
}
