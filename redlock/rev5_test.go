package redlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
	"github.com/stretchr/testify/require"
)

// pollNode is a user driver's node that does not queue and honours its
// context by polling ctx.Err (never asking for Done), as drivers that check
// the context between steps do. Its SetNX of key "slow" polls until the
// context ends, records what the context says then, and (if recheck is not
// nil) once more after recheck is closed.
type pollNode struct {
	*memory.Node
	mu      sync.Mutex
	err     error // ctx.Err() when the poll saw the end
	cause   error // context.Cause(ctx) then
	errLate error // ctx.Err() after recheck
	recheck chan struct{}
	polled  chan struct{} // closed when the poll saw the end
}

func (n *pollNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if key != "slow" {
		return n.Node.SetNX(ctx, key, value, ttl)
	}
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	n.mu.Lock()
	n.err, n.cause = ctx.Err(), context.Cause(ctx)
	n.mu.Unlock()
	close(n.polled)
	if n.recheck != nil {
		<-n.recheck
		n.mu.Lock()
		n.errLate = ctx.Err()
		n.mu.Unlock()
	}
	// The idiomatic return of a call that its context ended.
	return false, context.Cause(ctx)
}

// A node call whose context ended at the node timeout sees context.Cause(ctx)
// non-nil, as with the context.WithTimeout it had before af61bb3 (a check
// that passes: the context.Cause of Go 1.26 (go.mod) falls back to Err for a
// custom context under a cancelCtx whose cause is nil).
func TestRev5NodeContextCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &pollNode{Node: memory.New(), polled: make(chan struct{})}
		c, err := redlock.New([]driver.Node{n}, redlock.WithNodeTimeout(50*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithCancel(t.Context()) // a caller's context: a cancelCtx
		defer cancel()
		_, err = c.TryLock(ctx, "slow")
		require.Error(t, err)
		<-n.polled
		n.mu.Lock()
		defer n.mu.Unlock()
		require.ErrorIs(t, n.err, context.DeadlineExceeded)
		require.ErrorIs(t, n.cause, context.DeadlineExceeded, "context.Cause of a node context whose Err is %v", n.err)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "the timed-out call is a failure, not a refusal: %v", err)
	})
}

// Once a node call's context has said DeadlineExceeded (the node timeout),
// it must keep saying so (context.Context: "After Err returns a non-nil
// error, successive calls to Err return the same error"), also when the
// caller's context is canceled afterwards.
func TestRev5NodeContextErrStable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &pollNode{Node: memory.New(), polled: make(chan struct{}), recheck: make(chan struct{})}
		nodes := []driver.Node{memory.New(), memory.New(), slow}
		c, err := redlock.New(nodes, redlock.WithNodeTimeout(50*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		ctx, cancel := context.WithCancel(t.Context())
		l, err := c.TryLock(ctx, "slow") // two fast nodes grant it
		require.NoError(t, err)
		<-slow.polled
		cancel() // the caller moves on
		close(slow.recheck)
		synctest.Wait()
		slow.mu.Lock()
		first, late := slow.err, slow.errLate
		slow.mu.Unlock()
		require.ErrorIs(t, first, context.DeadlineExceeded)
		require.Equal(t, first, late, "the node context's Err changed from %v to %v", first, late)
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// qNode queues (driver.Queuer); its Extend records what the round's context
// carries, lazily and after asking for Done, and through a derived context.
type qNode struct {
	*memory.Node
	mu   sync.Mutex
	seen []string
	nt   []time.Duration
}

func (n *qNode) Pending() driver.Pending { return driver.Pending{} }

type rev5Key struct{}

func (n *qNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	look := func(when string, ctx context.Context) {
		d, _ := driver.NetworkTimeout(ctx)
		v, _ := ctx.Value(rev5Key{}).(string)
		n.mu.Lock()
		n.seen = append(n.seen, when+":"+v+":"+map[bool]string{true: "urgent", false: "-"}[driver.Urgent(ctx)])
		n.nt = append(n.nt, d)
		n.mu.Unlock()
	}
	look("lazy", ctx)
	_ = ctx.Done() // the lazy context becomes a context.WithDeadline
	look("real", ctx)
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	look("derived", child)
	return n.Node.Extend(ctx, key, value, ttl)
}

type rev5Obs struct{ redlock.NopObserver }

func (rev5Obs) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return context.WithValue(ctx, rev5Key{}, "obs"), nil
}

// Extend's calls to a node that queues see the node timeout as their network
// timeout (over one the caller's context carries), WithUrgent and the
// observer's values, before and after the context arms its timer, and
// through a context derived from it.
// It runs in a bubble (testing/synctest): a 70 ms node timeout on the real
// clock is a margin a loaded machine can pass, on in-process nodes too.
func TestRev5QueuedValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &qNode{Node: memory.New()}
		nodes := []driver.Node{q, memory.New(), memory.New()}
		const nodeTimeout = 70 * time.Millisecond
		c, err := redlock.New(nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithObserver(rev5Obs{}))
		require.NoError(t, err)
		defer c.Close()
		ctx := driver.WithNetworkTimeout(t.Context(), time.Hour)
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, l.Extend(ctx, 10*time.Second))
		require.NoError(t, l.Unlock(t.Context()))
		// Extend returns once two nodes decided: q's call may still run. Close
		// waits for it.
		require.NoError(t, c.Close())
		q.mu.Lock()
		defer q.mu.Unlock()
		require.Equal(t, []string{"lazy:obs:urgent", "real:obs:urgent", "derived:obs:urgent"}, q.seen)
		for _, d := range q.nt {
			require.Equal(t, nodeTimeout, d)
		}
	})
}

// With a context that has already ended, TryLock and Lock return at once
// without a node call (bb1ad55: "an ended context now always returns at once
// rather than sometimes taking the slot").
func TestRev5EndedContextNoCalls(t *testing.T) {
	cs, nodes := countingNodes(3)
	c := newClient(t, nodes)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 20 {
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, context.Canceled)
		_, err = c.Lock(ctx, "k")
		require.ErrorIs(t, err, context.Canceled)
	}
	require.Zero(t, sentCalls(cs), "TryLock and Lock with an ended context")
}

// Do with a context that has already ended sends nothing either: its first
// attempt once took a free slot and sent a round (and abandon's releases)
// with the ended context (fixed in 549e458).
func TestRev5DoEndedContextNoCalls(t *testing.T) {
	cs, nodes := countingNodes(3)
	rec := &outcomes{}
	c := newClient(t, nodes, redlock.WithObserver(rec))
	defer func() {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for i, o := range rec.got {
			if o != redlock.OutcomeError {
				t.Errorf("Do's attempt %d with an ended context: outcome %v, want OutcomeError", i, o)
			}
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 20 {
		err := c.Do(ctx, "k", func(context.Context) error { return nil })
		require.ErrorIs(t, err, context.Canceled)
	}
	require.Zero(t, sentCalls(cs), "Do with an ended context sent node calls")
}

// keepNode is a user driver's node that does not queue and answers at once,
// leaving a goroutine that consults the call's context afterwards (as a
// driver that finishes a call in the background does).
type keepNode struct {
	*memory.Node
	mu     sync.Mutex
	before error // ctx.Err() after the node timeout, before asking for Done
	after  error // ctx.Err() once Done was asked for
}

func (n *keepNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	go func() {
		time.Sleep(time.Second) // past the node timeout
		b := ctx.Err()
		<-ctx.Done()
		a := ctx.Err()
		n.mu.Lock()
		n.before, n.after = b, a
		n.mu.Unlock()
	}()
	return n.Node.SetNX(ctx, key, value, ttl)
}

// A node call's context, ended when the round's calls have all returned
// (context.Canceled), must keep its error when Done is asked for later:
// it must not turn into context.DeadlineExceeded.
func TestRev5NodeContextErrStableAfterEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := &keepNode{Node: memory.New()}
		c, err := redlock.New([]driver.Node{n}, redlock.WithNodeTimeout(50*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		n.mu.Lock()
		before, after := n.before, n.after
		n.mu.Unlock()
		require.ErrorIs(t, before, context.Canceled)
		require.Equal(t, before, after, "the node context's Err changed from %v to %v", before, after)
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// sentCalls counts the SETs and releases that the nodes of cs received.
func sentCalls(cs []*counting) (n int32) {
	for _, c := range cs {
		n += c.setNX.Load() + c.release.Load()
	}
	return n
}
