package redlock_test

import (
	"context"
	"errors"
	"fmt"
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

// countedIDNode tells its identity as idNode does, counting the questions
// and those in flight; with stall, a question waits for its context's end.
//
// The tests over these nodes run in a bubble (testing/synctest), whose clock
// moves only when every goroutine in it waits: on the real clock, a machine
// that stalls the test past the default 200ms node timeout fails a question
// or a SET that the test needs answered.
type countedIDNode struct {
	*memory.Node
	id       string
	stall    bool
	fail     error // the answer instead of the identity, when not nil
	asked    atomic.Int32
	inFlight atomic.Int32
}

func (n *countedIDNode) Identity(ctx context.Context) ([]string, error) {
	n.asked.Add(1)
	n.inFlight.Add(1)
	defer n.inFlight.Add(-1)
	switch {
	case n.stall:
		<-ctx.Done()
		return nil, ctx.Err()
	case n.fail != nil:
		return nil, n.fail
	}
	return []string{n.id}, nil
}

func countedIDNodes(n int) ([]*countedIDNode, []driver.Node) {
	ids := make([]*countedIDNode, n)
	nodes := make([]driver.Node, n)
	for i := range ids {
		ids[i] = &countedIDNode{Node: memory.New(), id: fmt.Sprint("server", i)}
		nodes[i] = ids[i]
	}
	return ids, nodes
}

func askedTimes(ids []*countedIDNode) []int32 {
	n := make([]int32, len(ids))
	for i, id := range ids {
		n[i] = id.asked.Load()
	}
	return n
}

// Connect asks every node its identity once, and the acquisitions after it
// ask none again; a second Connect asks nothing either.
func TestConnectRecordsIdentities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		c := newClient(t, nodes)
		require.NoError(t, c.Connect(t.Context()))
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "one question per node")
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		l, err = c.Lock(t.Context(), "k2")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		require.NoError(t, c.Connect(t.Context()))
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "asked again after Connect")
	})
}

// A node that is stalled does not hold Connect up once a quorum answered:
// it returns nil a node timeout later, its question cut and ended, no
// goroutine of it left running; the first acquisition then asks only that
// node again.
// It runs in a bubble (testing/synctest): the node timeout is then exact.
func TestConnectStalledMinority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		ids[2].stall = true
		const nodeTimeout = time.Second
		rec := &identityCalls{}
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(nodeTimeout), redlock.WithObserver(rec))
		start := time.Now()
		require.NoError(t, c.Connect(t.Context()))
		require.Equal(t, nodeTimeout, time.Since(start), "a quorum answered at once, then one node timeout")
		require.Zero(t, ids[2].inFlight.Load(), "the stalled node's question still runs after Connect returned")
		rec.mu.Lock()
		require.Empty(t, rec.calls, "Connect's own cut is no node's failure")
		rec.mu.Unlock()
		ids[2].stall = false
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		synctest.Wait()
		require.Equal(t, []int32{1, 1, 2}, askedTimes(ids), "the first acquisition asks the node that did not answer Connect, only")
	})
}

// Too many nodes failed for a quorum: ErrUnavailable with each failed
// node's *NodeError, at once; the observers heard each failure.
func TestConnectTooManyFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		down := errors.New("connection refused")
		ids[0].fail, ids[1].fail = down, down
		rec := &identityCalls{}
		c := newClient(t, nodes, redlock.WithObserver(rec))
		err := c.Connect(t.Context())
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		require.ErrorIs(t, err, down)
		var ne *redlock.NodeError
		require.ErrorAs(t, err, &ne)
		require.NotErrorIs(t, err, context.Canceled)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		require.Len(t, rec.calls, 2, "the observers heard each failed question before Connect returned")
		for _, e := range rec.calls {
			require.ErrorIs(t, e.Err, down)
		}
	})
}

// A node that refuses the question for good (NOPERM) is up: it counts as
// answered, and the observers hear the refusal.
func TestConnectRefusedQuestionCountsAsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := []driver.Node{noInfoNode{memory.New()}, noInfoNode{memory.New()}, noInfoNode{memory.New()}}
		rec := &identityCalls{}
		c := newClient(t, nodes, redlock.WithObserver(rec))
		require.NoError(t, c.Connect(t.Context()))
		rec.mu.Lock()
		require.Len(t, rec.calls, 3)
		rec.mu.Unlock()
	})
}

// The context's end cuts every question: Connect returns ctx.Err() (not
// ErrUnavailable: no node failed), with none of its questions running.
func TestConnectContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		for _, n := range ids {
			n.stall = true
		}
		c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(5*time.Second))
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := c.Connect(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, redlock.ErrUnavailable)
		require.Equal(t, 300*time.Millisecond, time.Since(start), "returned at the context's end")
		for i, n := range ids {
			require.Zero(t, n.inFlight.Load(), "node %d's question runs after Connect returned", i)
		}
	})
}

// Two nodes that tell one identity: Connect reports it, and the
// acquisitions fail with the same error without asking again.
func TestConnectFindsDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		ids[2].id = "server0"
		c := newClient(t, nodes)
		err := c.Connect(t.Context())
		require.ErrorContains(t, err, "reach the same server (server0)")
		require.NotErrorIs(t, err, redlock.ErrUnavailable)
		_, again := c.TryLock(t.Context(), "k")
		require.Equal(t, err, again, "the acquisitions' error is Connect's")
		require.Equal(t, err, c.Connect(t.Context()), "and a later Connect's")
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids))
	})
}

// Close during Connect cuts its questions: Connect returns ErrClosed, and
// Close does not wait its node timeout for them; Connect after Close
// returns ErrClosed without a call.
func TestConnectClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		for _, n := range ids {
			n.stall = true
		}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(10*time.Second))
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- c.Connect(context.Background()) }()
		synctest.Wait() // the questions are asked, and wait
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids))
		start := time.Now()
		require.NoError(t, c.Close())
		require.ErrorIs(t, <-done, redlock.ErrClosed)
		require.Zero(t, time.Since(start), "Close waited for Connect's questions")
		for i, n := range ids {
			require.Zero(t, n.inFlight.Load(), "node %d's question runs after Close", i)
		}
		require.ErrorIs(t, c.Connect(t.Context()), redlock.ErrClosed)
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "a closed Client's Connect asked")
	})
}

// Over nodes that are not driver.Identifiers (the memory driver's),
// Connect makes no call and returns nil; a nil context and an unmade
// Client are errors, not panics.
func TestConnectMemoryAndBadInput(t *testing.T) {
	var n driver.Node = memory.New()
	_, isID := n.(driver.Identifier)
	require.False(t, isID, "the memory driver's node would be asked")
	c, err := redlock.Open("memory", []string{"a", "b", "c"})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Connect(t.Context()))
	//lint:ignore SA1012 the nil context is the input under test
	require.Error(t, c.Connect(nil)) //nolint:staticcheck
	var zero *redlock.Client
	require.Error(t, zero.Connect(t.Context()))
	require.Error(t, new(redlock.Client).Connect(t.Context()))
}

// Connects at once with acquisitions, and with each other, while the
// nodes answer, are race-free and agree: every node told, nothing asked
// after that. The node timeout is liveNodeTimeout: on the real clock the
// default 200ms failed the TryLock or the Unlock after the Connects on a
// loaded machine ("context deadline exceeded" on 2 of the 3 memory nodes).
func TestConnectConcurrentWithAcquisitions(t *testing.T) {
	for range 20 {
		ids, nodes := countedIDNodes(3)
		c := newClient(t, nodes, redlock.WithNodeTimeout(liveNodeTimeout))
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				require.NoError(t, c.Connect(t.Context()))
			})
			wg.Go(func() {
				l, err := c.TryLock(t.Context(), fmt.Sprint("k", g))
				if err == nil {
					l.Unlock(t.Context())
				}
			})
		}
		wg.Wait()
		redlock.WaitIdle(c) // the acquisitions' questions in flight
		before := askedTimes(ids)
		require.NoError(t, c.Connect(t.Context()))
		l, err := c.TryLock(t.Context(), "after")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		require.Equal(t, before, askedTimes(ids), "asked after every node told")
	}
}
