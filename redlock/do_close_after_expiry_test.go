package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A lock held through Do whose validity ended, its last extension having
// failed (a timeout on a majority), before the keeper's timer noticed (it
// fires late: a paused or loaded process), and then Close: the lock expired
// before Close stopped anything, so it ended EndExpired, and Do's error says
// why, the failed extension's error, as Do's doc and LockEnd.Err say. Close
// relabeled it EndClosed (LockEnd.Err ErrClosed) and Do's error was a bare
// "redlock: lock lost": the more accurate cause kept on the Lock was
// overwritten by the later event. The Client's clock runs ahead of the
// bubble's timers by the TTL, from the moment the extension has failed, to
// stand for the keeper's timer being late.
func TestDoCloseAfterUnnoticedExpiry(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	timeout := errors.New("i/o timeout")
	synctest.Test(t, func(t *testing.T) {
		_, nodes, extendErrs, _ := faultyNodes(3)
		ends := &lockEnds{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every), redlock.WithObserver(ends))
		var skew atomic.Int64
		redlock.SetClock(c, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			for i := range 2 {
				extendErrs[i].Store(&timeout)
			}
			time.Sleep(every + time.Second) // the first extension failed; the next is due at every*5/4
			require.NoError(t, ctx.Err(), "the lock is still held")
			skew.Store(int64(ttl)) // its validity has ended; the keeper's timer has not fired yet
			require.NoError(t, c.Close())
			<-ctx.Done()
			return nil
		})
		require.ErrorIs(t, err, redlock.ErrLockLost)
		var ve *redlock.VoteError
		require.ErrorAs(t, err, &ve, "Do's error has the last extension's votes: %v", err)
		require.Equal(t, [2]int{0, 2}, [2]int{ve.Refused, ve.Failed}, "the extension's votes (refused, failed): %v", err)
		require.ErrorIs(t, err, timeout, "Do's error has the extension's node errors: %v", err)
		e := ends.only(t)
		require.Equal(t, redlock.EndExpired, e.How, "the validity had ended before Close: LockEnd.Err %v", e.Err)
		require.ErrorIs(t, e.Err, timeout, "LockEnd.Err is the failed extension's")
		require.ErrorIs(t, err, e.Err, "Do's error tells the LockEnd's Err")
	})
}

// Close stops the extensions of a lock held through Do well before its
// validity ends, and releases it later, once the Client's other work has
// ended (here a queued extension that holds Close's wait for the node
// timeout), by when the validity has passed (the Client's clock run ahead
// by the TTL during that wait). The lock was Close's loss: it ended when
// Close stopped its extensions, EndClosed, and Do's error is ErrLockLost
// itself, not an expiry's.
func TestDoCloseThenValidityPassesBeforeRelease(t *testing.T) {
	const (
		ttl         = 30 * time.Second
		every       = 10 * time.Second
		nodeTimeout = time.Second
	)
	synctest.Test(t, func(t *testing.T) {
		var saturated atomic.Bool
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = saturatedQueuer{memory.New(), &saturated}
		}
		ends := &lockEnds{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every),
			redlock.WithNodeTimeout(nodeTimeout), redlock.WithObserver(ends))
		defer time.Sleep(ttl) // the queued extension ends at its bound, also when the test fails
		var skew atomic.Int64
		redlock.SetClock(c, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			saturated.Store(true)
			time.Sleep(every + every/20) // the first extension waits in the queues
			go func() {
				// After Close's first wait (a node timeout), during its
				// wait for the keeper's group (another).
				time.Sleep(nodeTimeout + nodeTimeout/2)
				skew.Store(int64(ttl))
			}()
			require.NoError(t, c.Close())
			<-ctx.Done()
			return nil
		})
		require.ErrorIs(t, err, redlock.ErrLockLost)
		e := ends.only(t)
		require.Equal(t, redlock.EndClosed, e.How, "Close stopped the extensions before the validity ended: LockEnd.Err %v", e.Err)
		require.EqualError(t, err, redlock.ErrLockLost.Error(), "Do's error for EndClosed")
	})
}
