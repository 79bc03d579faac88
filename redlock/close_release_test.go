package redlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// closeWatchNode is a memory node (only driver.Node: no notifications, no
// fencing) that records the calls that reached it, or were still running,
// once it was closed: work of the Client that outlived its Close.
type closeWatchNode struct {
	m      *memory.Node
	mu     sync.Mutex
	closed bool
	active int // calls running
	late   []string
}

func (n *closeWatchNode) enter(op string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.active++
	if n.closed {
		n.late = append(n.late, op+" sent after the node's Close")
	}
}

func (n *closeWatchNode) leave(op string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.active--
	if n.closed {
		n.late = append(n.late, op+" returned after the node's Close")
	}
}

func (n *closeWatchNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.enter("SET")
	defer n.leave("SET")
	return n.m.SetNX(ctx, key, value, ttl)
}

func (n *closeWatchNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.enter("release")
	defer n.leave("release")
	return n.m.EvalRelease(ctx, key, value)
}

func (n *closeWatchNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.enter("extend")
	defer n.leave("extend")
	return n.m.Extend(ctx, key, value, ttl)
}

func (n *closeWatchNode) Close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	return n.m.Close()
}

func (n *closeWatchNode) lateCalls() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.late...)
}

func closeWatchNodes(n int, latency time.Duration) ([]*memory.Node, []*closeWatchNode, []driver.Node) {
	mem, _ := memNodes(n)
	watch := make([]*closeWatchNode, n)
	nodes := make([]driver.Node, n)
	for i, m := range mem {
		m.SetLatency(latency)
		watch[i] = &closeWatchNode{m: m}
		nodes[i] = watch[i]
	}
	return mem, watch, nodes
}

// Close releases the lock of a Do whose fn does not return when Close
// cancels its context: before, Close returned with the key still held on
// every node (until its TTL), and the release that Do sent once fn returned
// went to the closed nodes, failed there, and was left to Do's error. Now
// the key is free when Close returns, Do sends nothing after Close, and Do
// reports the lock lost (Close ended it) without ErrUnavailable: its release
// succeeded.
func TestCloseReleasesDoStillRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, watch, nodes := closeWatchNodes(3, time.Millisecond)
		c, err := redlock.New(nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond))
		require.NoError(t, err)
		holding, proceed := make(chan struct{}), make(chan struct{})
		result := make(chan error, 1)
		go func() {
			result <- c.Do(context.Background(), "k", func(ctx context.Context) error {
				close(holding)
				<-ctx.Done()
				<-proceed // fn outlives Close
				return nil
			})
		}()
		<-holding
		require.NoError(t, c.Close())
		assert.Zero(t, holders(mem, "k"), "nodes that still hold the key of the Do canceled by Close, once Close returned")
		close(proceed)
		err = <-result
		require.ErrorIs(t, err, redlock.ErrLockLost, "Close ended the Do's lock")
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "the release of the Do's lock failed")
		synctest.Wait()
		for i, w := range watch {
			assert.Empty(t, w.lateCalls(), "node %d", i)
		}
	})
}

// A Do whose fn returns as soon as Close cancels its context sends its
// release while Close runs: Close waits for it (bounded by the node
// timeout) before it closes the nodes. Before, Close went on at once, closed
// the nodes while the release was on its way to them (its calls take a
// millisecond here) and returned with the release still running on the
// Client's goroutines.
func TestCloseWaitsForDoRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, watch, nodes := closeWatchNodes(3, time.Millisecond)
		c, err := redlock.New(nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond))
		require.NoError(t, err)
		holding := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			result <- c.Do(context.Background(), "k", func(ctx context.Context) error {
				close(holding)
				<-ctx.Done()
				return context.Cause(ctx)
			})
		}()
		<-holding
		require.NoError(t, c.Close())
		assert.Zero(t, holders(mem, "k"), "nodes that still hold the key of the Do canceled by Close, once Close returned")
		for i, w := range watch {
			assert.Empty(t, w.lateCalls(), "node %d, once Close returned", i)
		}
		err = <-result
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "the release of the Do's lock failed")
		synctest.Wait()
		for i, w := range watch {
			assert.Empty(t, w.lateCalls(), "node %d", i)
		}
	})
}

// heldSetNode is a closeWatchNode whose SETs wait for unblock, whatever
// their context says: an acquisition still in flight when Close has
// released the locks of Do and closed the nodes.
type heldSetNode struct {
	*closeWatchNode
	unblock chan struct{}
}

func (n heldSetNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.enter("SET")
	defer n.leave("SET")
	<-n.unblock
	return n.m.SetNX(context.Background(), key, value, ttl)
}

// A Do granted its lock only after Close released the locks of Do (its
// acquisition was held up past Close's first wait) sends no release to the
// nodes Close is closing: its error says that the lock was not released, matching
// ErrLockLost and ErrClosed.
func TestCloseDoGrantedAfterCloseTells(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		err, ran, watch := doGrantedAfterClose(t)
		require.True(t, ran, "fn ran: the lock was granted; Do: %v", err)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrClosed, "the lock was not released")
		synctest.Wait()
		for i, w := range watch {
			for _, call := range w.lateCalls() {
				assert.NotContains(t, call, "release", "node %d", i)
			}
		}
	})
}

// doGrantedAfterClose runs, in a synctest bubble, a Do (on a Client with
// opts) whose SETs are held up until Close has released the locks of Do,
// closes the Client, and returns what Do returned, whether its function
// ran, and the nodes.
func doGrantedAfterClose(t *testing.T, opts ...redlock.Option) (err error, ran bool, watch []*closeWatchNode) {
	t.Helper()
	_, watch, _ = closeWatchNodes(3, 0)
	unblock := make(chan struct{})
	nodes := make([]driver.Node, len(watch))
	for i, w := range watch {
		nodes[i] = heldSetNode{w, unblock}
	}
	c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	result := make(chan error, 1)
	go func() {
		result <- c.Do(context.Background(), "k", func(ctx context.Context) error {
			ran = true
			<-ctx.Done()
			return nil
		})
	}()
	synctest.Wait() // the SETs wait
	go func() {
		// Close waits a node timeout (100ms) for the calls in
		// flight, releases the locks of Do, then waits up to a node
		// timeout again for the calls in flight: the SETs return in
		// that second wait, the nodes still open.
		time.Sleep(150 * time.Millisecond)
		close(unblock)
	}()
	require.NoError(t, c.Close())
	err = <-result
	return err, ran, watch
}
