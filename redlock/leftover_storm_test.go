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

// A waiter one of whose nodes fails its SETs at once and answers their
// releases keeps its Backoff while another Client holds the lock.
//
// "quorum of 5" (it was TestWaiterWithAFailingNodeUnderAQuorumHeldElsewhereKeepsItsBackoff):
// the holder has a quorum (3 of 5), one of its nodes the failing one. Each
// of the waiter's attempts is refused by the holder's key on two nodes and
// granted on the two free ones: the failed SET and the grants make a quorum
// that "may" grant it (mayWin), so it was woken as soon as the failed SET's
// release was answered, again and again while nothing changed, an attempt
// every few node calls, not on its Backoff: with memory nodes, whose calls
// take no time, the synctest bubble spun without its clock moving.
//
// "lone" (it was TestLoneWaiterWithAFailingNodeKeepsItsBackoff): the same
// with a Client of one node (its direct path: a failed attempt goes through
// loneRound, then abandon): each failed SET's release, answered at once,
// woke the waiter again.
func TestWaiterWithAFailingNodeKeepsItsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		free  []int // the nodes the holder's key is taken from
	}{
		{"quorum of 5", 5, []int{3, 4}},
		{"lone", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _ := memNodes(tc.nodes)
				held := holdElsewhere(t, mem, tc.free...)
				waiterNodes := make([]driver.Node, len(mem))
				for i, m := range mem {
					waiterNodes[i] = m
				}
				waiterNodes[0] = failingSetNode{mem[0]}
				attempts, wakes := lockUnderBackoff(t, waiterNodes)
				// One wake at the first end of its leftovers (mayWin cannot
				// tell a failed SET that left its key from one that did
				// not), then none until a release is announced.
				require.LessOrEqual(t, wakes, 1, "wakes while the holder kept the lock")
				// The first, the one after it subscribed, the woken one and
				// the split vote's quick retry, then one a minute.
				require.LessOrEqual(t, attempts, 7, "attempts in 3.5 minutes, the Backoff a minute")
				require.NoError(t, held.Unlock(context.Background()))
			})
		})
	}
}

// holdElsewhere has another Client take "k" (TTL an hour) on mem's nodes,
// then deletes its key on mem[free...]: the lock is held on the others.
func holdElsewhere(t *testing.T, mem []*memory.Node, free ...int) *redlock.Lock {
	t.Helper()
	nodes := make([]driver.Node, len(mem))
	for i, m := range mem {
		nodes[i] = m
	}
	holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
	held, err := holder.TryLock(t.Context(), "k")
	require.NoError(t, err)
	synctest.Wait()
	for _, i := range free {
		require.True(t, mem[i].Delete("k"))
	}
	return held
}

// lockUnderBackoff has a waiter over waiterNodes (TTL an hour, node timeout
// 100 ms, Backoff a minute) try to Lock "k" for 3.5 minutes of the bubble's
// clock, which another Client holds: it must fail with ErrNotObtained and
// the deadline. It returns the waiter's attempts and wakes in that time.
func lockUnderBackoff(t *testing.T, waiterNodes []driver.Node) (attempts, wakes int) {
	t.Helper()
	log := &attemptLog{}
	waiter := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
		redlock.WithBackoff(func(int) time.Duration { return time.Minute }), redlock.WithObserver(log))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute+30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := waiter.Lock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	return log.since(start)
}
