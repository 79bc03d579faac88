package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// unpublishedRelease is a memory node whose releases with a notice
// (ReleaseNotify, Unlock's) fail, as on a connection reset: the key is then
// released by the background's plain releases, which publish nothing.
type unpublishedRelease struct{ *memory.Node }

func (unpublishedRelease) ReleaseNotify(context.Context, string, string) (bool, error) {
	return false, errors.New("connection reset by peer")
}

// A waiter's subscriptions to two of three nodes are confirmed after its
// first one (within the node timeout), so Lock, which waits for the first
// only, has tried again and failed before them. The holder's release comes
// in between: published on those two nodes, which had no subscription yet,
// and not on the one the waiter listened on, whose release failed. The late
// confirmations wake the waiter for one attempt, which gets the free key,
// rather than leave it asleep until its Backoff (an hour).
func TestWaiterTriesOnceItsLateSubscriptionsAreConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		holderNodes := append([]driver.Node(nil), nodes...)
		holderNodes[0] = unpublishedRelease{mem[0]}
		holder := newClient(t, holderNodes, redlock.WithTTL(time.Hour))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()

		gate := make(chan struct{})
		waiterNodes := []driver.Node{mem[0], lateConfirm{mem[1], gate}, lateConfirm{mem[2], gate}}
		log := &attemptLog{}
		waiter := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(time.Second),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithObserver(log))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		returned := goLock(ctx, waiter, "k")
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		attempts, _ := log.since(time.Time{})
		require.Equal(t, 2, attempts, "the first, then one once subscribed on the first node")

		require.NoError(t, held.Unlock(context.Background()))
		synctest.Wait()
		require.False(t, mem[1].Holds("k") || mem[2].Holds("k"), "released where the waiter had no subscription yet")
		select {
		case r := <-returned:
			t.Fatalf("Lock returned before its late subscriptions were confirmed: %v", r.err)
		default:
		}

		close(gate) // 10ms after they were asked for: within the node timeout
		select {
		case r := <-returned:
			require.NoError(t, r.err)
			after, wakes := log.since(time.Time{})
			require.Equal(t, 3, after, "one attempt for the late confirmations, however many")
			require.Equal(t, 1, wakes)
			require.NoError(t, r.l.Unlock(context.Background()))
		case <-time.After(30 * time.Minute):
			t.Fatal("the release before the late confirmations was not heard: the waiter sleeps its Backoff (an hour)")
		}
	})
}

// lateSubscribe is a memory node whose subscriptions are confirmed 10ms
// after they are asked for, within the node timeout.
type lateSubscribe struct{ *memory.Node }

func (n lateSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := (memory.RealClock{}).Sleep(ctx, 10*time.Millisecond); err != nil {
		return nil, err
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// Under a lock held elsewhere, a waiter whose subscriptions to four of five
// nodes are confirmed after its attempt began is woken once for them, not
// once each, and then keeps its Backoff: no wake storm.
func TestWaiterWithLateSubscriptionsUnderALockHeldElsewhereKeepsItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()

		waiterNodes := append([]driver.Node(nil), nodes...)
		for i := 1; i < len(mem); i++ {
			waiterNodes[i] = lateSubscribe{mem[i]}
		}
		log := &attemptLog{}
		waiter := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(func(int) time.Duration { return time.Minute }), redlock.WithObserver(log))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute+30*time.Second)
		defer cancel()
		start := time.Now()
		_, err = waiter.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		attempts, wakes := log.since(start)
		require.Equal(t, 1, wakes, "one wake for the four late confirmations")
		// The first, the one once subscribed, the one for the late
		// confirmations, then one a minute.
		require.LessOrEqual(t, attempts, 6, "attempts in 3.5 minutes, the Backoff a minute")
		require.NoError(t, held.Unlock(context.Background()))
	})
}
