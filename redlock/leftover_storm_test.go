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

// failingSetNode is a memory node whose SETs fail at once with an error
// (a connection reset, an ACL that denies SET only) while its releases are
// answered.
type failingSetNode struct{ *memory.Node }

func (failingSetNode) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("connection reset by peer")
}

// Another Client holds the lock on a quorum (3 of 5), one of its nodes
// failing the waiter's SETs at once and answering their releases. Each of
// the waiter's attempts is refused by the holder's key on two nodes and
// granted on the two free ones: the failed SET and the grants make a quorum
// that "may" grant it (mayWin), so it was woken as soon as the failed SET's
// release was answered, again and again while nothing changed, an attempt
// every few node calls, not on its Backoff: with memory nodes, whose calls
// take no time, the synctest bubble spun without its clock moving.
func TestWaiterWithAFailingNodeUnderAQuorumHeldElsewhereKeepsItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, mem[3].Delete("k"))
		require.True(t, mem[4].Delete("k"))

		waiterNodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			waiterNodes[i] = m
		}
		waiterNodes[0] = failingSetNode{mem[0]}
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
		// One wake at the first end of its leftovers (mayWin cannot tell
		// a failed SET that left its key from one that did not), then none
		// until a release is announced.
		require.LessOrEqual(t, wakes, 1, "wakes while the holder kept the lock on a quorum")
		// The first, the one after it subscribed, the woken one and the
		// split vote's quick retry, then one a minute.
		require.LessOrEqual(t, attempts, 7, "attempts in 3.5 minutes, the Backoff a minute")
		require.NoError(t, held.Unlock(context.Background()))
	})
}

// The same with a Client of one node (its direct path: a failed attempt
// goes through loneRound, then abandon), held by another Client: each
// failed SET's release, answered at once, woke the waiter again.
func TestLoneWaiterWithAFailingNodeKeepsItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(1)
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		log := &attemptLog{}
		waiter := newClient(t, []driver.Node{failingSetNode{mem[0]}}, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(func(int) time.Duration { return time.Minute }), redlock.WithObserver(log))

		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute+30*time.Second)
		defer cancel()
		start := time.Now()
		_, err = waiter.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		attempts, wakes := log.since(start)
		require.LessOrEqual(t, wakes, 1, "wakes while the holder kept the lock")
		require.LessOrEqual(t, attempts, 7, "attempts in 3.5 minutes, the Backoff a minute")
		require.NoError(t, held.Unlock(context.Background()))
	})
}
