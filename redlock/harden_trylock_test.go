package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Defect 13: concurrent TryLocks of one free key in one Client never all
// lose to a split vote: exactly one of them wins. In a bubble
// (testing/synctest): on the real clock, a machine that stalls the test past
// the default 200ms node timeout fails every TryLock of a round, and the
// Unlock of its winner.
func TestConcurrentTryLocksOneWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		for _, m := range mem {
			m.SetLatency(time.Millisecond) // calls land on each node in their own order
		}
		c := newClient(t, nodes)
		for round := range 10 {
			var (
				wg    sync.WaitGroup
				start = make(chan struct{})
				mu    sync.Mutex
				won   []*redlock.Lock
			)
			for range 50 {
				wg.Go(func() {
					<-start
					l, err := c.TryLock(t.Context(), "k")
					if err != nil {
						assert.ErrorIs(t, err, redlock.ErrNotObtained)
						return
					}
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			require.Len(t, won, 1, "round %d: winners of 50 concurrent TryLocks of a free key", round)
			require.NoError(t, won[0].Unlock(t.Context()))
			synctest.Wait()
			require.Zero(t, holders(mem, "k"))
		}
	})
}

// Defects 11 and 12: the releases of a failed attempt are repeated in the
// background while the nodes do not answer, and Close ends them: it returns
// within about twice the node timeout, leaving no goroutine behind.
func TestCloseEndsRepeatedReleases(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const nodeTimeout = 50 * time.Millisecond
	mem, nodes := memNodes(5)
	for _, m := range mem[:3] {
		m.SetStalled(true)
		defer m.SetStalled(false)
	}
	c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	_, err = c.TryLock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	time.Sleep(3 * nodeTimeout) // the releases to the stalled nodes are repeated meanwhile
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 2*nodeTimeout+3*time.Second, "Close waits at most about the node timeout, twice")
}

// lateSet models a stalled server in front of a memory node: while held, a
// SET is kept back (its call fails, as at the node timeout) and releases
// fail; land applies the kept SETs, as the server does when it resumes.
type lateSet struct {
	*memory.Node
	mu   *sync.Mutex
	held *bool
	kept *[]func()
}

func (n lateSet) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if *n.held {
		*n.kept = append(*n.kept, func() { n.Node.SetNX(context.Background(), key, value, ttl) })
		return false, context.DeadlineExceeded
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n lateSet) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	held := *n.held
	n.mu.Unlock()
	if held {
		return false, context.DeadlineExceeded
	}
	return n.Node.EvalRelease(ctx, key, value)
}

func (n lateSet) land() {
	n.mu.Lock()
	defer n.mu.Unlock()
	*n.held = false
	for _, f := range *n.kept {
		f()
	}
	*n.kept = nil
}

// Defect 12 on in-process nodes: the release of a node whose SET had an
// unknown outcome is repeated until the node answers, so a SET applied late
// goes within about the node timeout after the node answers again.
func TestReleaseRepeatedUntilAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 100 * time.Millisecond
		mem, _ := memNodes(5)
		nodes := make([]driver.Node, len(mem))
		var late []lateSet
		for i, m := range mem {
			nodes[i] = opaque{m}
			if i < 3 {
				held := true
				n := lateSet{Node: m, mu: new(sync.Mutex), held: &held, kept: new([]func())}
				late = append(late, n)
				nodes[i] = n
			}
		}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		defer c.Close()
		_, err = c.TryLock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		// The releases fail meanwhile. The cleaners retry every node
		// timeout from the first release: land half-way between two tries
		// (and once every goroutine waits), so that none runs between the
		// landing and the count.
		time.Sleep(5*nodeTimeout + nodeTimeout/2)
		synctest.Wait()
		for _, n := range late {
			n.land() // the kept SETs land after the releases sent so far
		}
		require.Equal(t, 3, holders(mem, "k"))
		time.Sleep(2 * nodeTimeout)
		synctest.Wait()
		assert.Zero(t, holders(mem, "k"), "the repeated releases removed the keys of the late SETs")
	})
}

// countRelease counts the releases that reach a node.
type countRelease struct {
	driver.Node
	n *atomic.Int64
}

func (c countRelease) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	c.n.Add(1)
	return c.Node.EvalRelease(ctx, key, value)
}

// The repeated releases of many failed attempts cost one call per node timeout
// to a node that does not answer, not one per attempt: they wait in one queue
// per node. In a bubble (testing/synctest): the releases are counted over a
// window of the bubble's clock, which a machine that stalls the test cannot
// stretch or shrink.
func TestRepeatedReleasesShareANode(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 50 * time.Millisecond
		mem, _ := memNodes(5)
		var calls atomic.Int64
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = opaque{m}
		}
		nodes[0] = countRelease{mem[0], &calls}
		for _, m := range mem[:3] {
			m.SetDown(true) // fails at once: the releases never get an answer
		}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		const attempts = 200
		for i := range attempts {
			_, err := c.TryLock(t.Context(), fmt.Sprint("k", i))
			require.ErrorIs(t, err, redlock.ErrNotObtained)
		}
		calls.Store(0)
		const window = 10 * nodeTimeout
		time.Sleep(window)
		n := calls.Load()
		t.Logf("%d releases reached the down node in %v, for %d failed attempts", n, window, attempts)
		assert.LessOrEqual(t, n, int64(window/nodeTimeout)+5, "one release per node timeout while the node does not answer")
		assert.Positive(t, n, "the releases are still repeated")
		for _, m := range mem[:3] {
			m.SetDown(false)
		}
		require.NoError(t, c.Close())
	})
}
