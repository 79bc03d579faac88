package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// leftoverFaults are the faults of a leftoverNode.
type leftoverFaults struct {
	slowSets atomic.Bool // a SET that sets the key answers only when its context ends
	mu       sync.Mutex
	gate     chan struct{} // not nil: releases (EvalRelease) wait until it closes
}

func (f *leftoverFaults) holdReleases() {
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
}

func (f *leftoverFaults) letReleases() {
	f.mu.Lock()
	close(f.gate)
	f.gate = nil
	f.mu.Unlock()
}

// leftoverNode is a memory node whose SETs can be applied with their reply
// later than the node timeout (a loaded server), and whose plain releases
// (those of a failed attempt's keys, which publish nothing) can be held up.
type leftoverNode struct {
	*memory.Node
	f *leftoverFaults
}

func (n leftoverNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := n.Node.SetNX(ctx, key, value, ttl)
	if err != nil || !ok || !n.f.slowSets.Load() {
		return ok, err
	}
	<-ctx.Done()
	return false, ctx.Err()
}

func (n leftoverNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.f.mu.Lock()
	gate := n.f.gate
	n.f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return n.Node.EvalRelease(ctx, key, value)
}

// leftoverNodes returns 3 memory nodes, and the same nodes as a waiter
// sees them, with faults on the last two.
func leftoverNodes() (mem []*memory.Node, nodes []driver.Node, faults []*leftoverFaults) {
	mem, nodes = memNodes(3)
	waiterNodes := make([]driver.Node, len(mem))
	faults = make([]*leftoverFaults, len(mem))
	for i, m := range mem {
		faults[i] = &leftoverFaults{}
		waiterNodes[i] = leftoverNode{m, faults[i]}
	}
	return mem, waiterNodes, faults
}

// A waiter woken by a release whose attempt timed out on two nodes of three
// (their SETs applied, the replies later than the node timeout) left its own
// keys there, released in the background without a notice. Its retry after
// the split vote was refused by those keys. It tries again as soon as they
// are released, not after its Backoff (an hour).
func TestWaiterTriesAgainOnceItsLeftoverKeysAreReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, waiterNodes, faults := leftoverNodes()
		held := holdElsewhere(t, mem)
		require.Equal(t, 3, holders(mem, "k"))
		log := &attemptLog{}
		waiter := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithObserver(log))

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		returned := goLock(ctx, waiter, "k")
		time.Sleep(time.Minute) // its first attempts, then it waits, subscribed
		synctest.Wait()

		for _, f := range faults[1:] {
			f.slowSets.Store(true)
			f.holdReleases()
		}
		require.NoError(t, held.Unlock(context.Background()))
		time.Sleep(time.Minute) // woken, it tries, times out on two nodes, retries and is refused there
		synctest.Wait()
		select {
		case r := <-returned:
			t.Fatalf("Lock returned while its own keys held two nodes: %v", r.err)
		default:
		}
		require.False(t, mem[0].Holds("k"), "the granted node's key was released")
		require.True(t, mem[1].Holds("k") && mem[2].Holds("k"), "the timed-out SETs' keys wait for their release")
		attempts, _ := log.since(time.Time{})

		for _, f := range faults[1:] {
			f.slowSets.Store(false)
			f.letReleases()
		}
		let := time.Now()
		select {
		case r := <-returned:
			require.NoError(t, r.err)
			require.Less(t, time.Since(let), time.Minute)
			after, _ := log.since(time.Time{})
			require.Equal(t, attempts+1, after, "one attempt once its keys were released")
			require.NoError(t, r.l.Unlock(context.Background()))
		case <-time.After(30 * time.Minute):
			t.Fatal("the waiter did not try again once its leftover keys were released (Backoff: an hour)")
		}
	})
}

// A waiter refused by a quorum that another Client holds is not woken by the
// release of its own key on a node where its SET timed out: that key is not
// what keeps it from the lock, and such wakes would repeat a refused attempt
// each time its clean-up ended (every node timeout or so), not on its
// Backoff.
func TestWaiterRefusedByAQuorumIgnoresItsLeftoverKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, waiterNodes, faults := leftoverNodes()
		held := holdElsewhere(t, mem, 2)
		faults[2].slowSets.Store(true)
		attempts, wakes := lockUnderBackoff(t, waiterNodes)
		require.Zero(t, wakes)
		// The first, the one after it subscribed, then one a minute.
		require.LessOrEqual(t, attempts, 5, "attempts in 3.5 minutes, the Backoff a minute")
		require.NoError(t, held.Unlock(context.Background()))
	})
}
