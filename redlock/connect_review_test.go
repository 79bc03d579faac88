package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Connect with a context that has already ended asks no node (no I/O, as
// an acquisition's attempt sends nothing then) and returns the context's
// error, every time: before, it asked every node with the ended context
// and returned nil or context.Canceled, whichever its select took first,
// for nodes that answer at once.
func TestConnectEndedContextAsksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for i := range 50 {
			ids, nodes := countedIDNodes(3)
			c := newClient(t, nodes)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			err := c.Connect(ctx)
			require.ErrorIs(t, err, context.Canceled, "try %d", i)
			require.Equal(t, []int32{0, 0, 0}, askedTimes(ids), "try %d: asked with an ended context", i)
			// A quorum told already: nil, as when ctx ends once a quorum
			// answered; the node left is not asked.
			ids[2].stall = true
			require.NoError(t, c.Connect(t.Context()), "try %d", i)
			require.NoError(t, c.Connect(ctx), "try %d", i)
			require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "try %d", i)
		}
	})
}

// The first acquisition waits in checkAnswered for the identity of a node
// that granted it (node 2, node 0's server under another address, whose
// question takes 50ms) while a concurrent Connect records the answer of
// node 1 (10ms; the recording wakes the wait): it must go on waiting, and fail
// with the duplicate, as without Connect. Then the Connect that began
// first, with the acquisition asking meanwhile.
func TestConnectDuringFirstAcquisitionStillFindsDuplicate(t *testing.T) {
	for _, connectFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			slow, nodes := slowIDNodes(3)
			slow[1].delay = 10 * time.Millisecond // told while the acquisition waits
			slow[2].id, slow[2].delay = "server0", 50*time.Millisecond
			c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(time.Second))
			connected := make(chan error, 1)
			if connectFirst {
				go func() { connected <- c.Connect(t.Context()) }()
				synctest.Wait() // nodes 0 and 1 told; node 2's question waits
			}
			acquired := make(chan error, 1)
			go func() {
				l, err := c.TryLock(t.Context(), "k")
				if l != nil {
					l.Unlock(t.Context())
				}
				acquired <- err
			}()
			if !connectFirst {
				synctest.Wait() // the acquisition waits for node 2's identity
				go func() { connected <- c.Connect(t.Context()) }()
			}
			err := <-acquired
			require.ErrorContains(t, err, "reach the same server (server0)", "connect first: %v", connectFirst)
			require.ErrorContains(t, <-connected, "reach the same server (server0)")
		})
	}
}

// slowIDNodes returns n nodes that tell the identities server0, server1,
// ... at once, until a test changes their delays or identities.
func slowIDNodes(n int) ([]*slowIDNode, []driver.Node) {
	slow := make([]*slowIDNode, n)
	nodes := make([]driver.Node, n)
	for i := range nodes {
		slow[i] = &slowIDNode{Node: memory.New(), id: fmt.Sprint("server", i)}
		nodes[i] = slow[i]
	}
	return slow, nodes
}

// Questions cut by the end of Connect's context are no node's failure
// (Connect counts them as nothing failed, and returns ctx.Err()): the
// observers hear none of them. Before, they heard each that returned
// before Connect's own wake at the context's end, 0 to 3 of them by the
// order the runtime woke the goroutines.
func TestConnectContextCutNotObserved(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			ids, nodes := countedIDNodes(3)
			for _, n := range ids {
				n.stall = true
			}
			rec := &identityCalls{}
			c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(5*time.Second), redlock.WithObserver(rec))
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, c.Connect(ctx), context.DeadlineExceeded)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Empty(t, rec.calls, "try %d: the context's cut observed as failures", i)
		})
	}
}

// An acquisition whose context has already ended sends nothing, and asks
// no node its identity either: before, TryLock, Lock and Do on a fresh
// Client started the first round of questions in the background, which
// Close then waited for (the redlock command, signalled while it
// connected, took 3s to exit with goredis and 5s with rueidis over nodes
// that did not answer, with a --node-timeout of ten minutes: the drivers'
// own bounds). The next acquisition still begins the first round.
func TestAcquisitionWithEndedContextAsksNoIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		c := newClient(t, nodes)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, context.Canceled)
		_, err = c.Lock(ctx, "k")
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, c.Do(ctx, "k", func(context.Context) error { return nil }), context.Canceled)
		redlock.WaitIdle(c)
		require.Equal(t, []int32{0, 0, 0}, askedTimes(ids), "asked with an ended context")
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		redlock.WaitIdle(c)
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "the first acquisition with a live context asks")
	})
}
