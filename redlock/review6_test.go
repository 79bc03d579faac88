package redlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// lateExtendNode is a node whose Extend of a given TTL is applied late: its
// call waits until its context ends and fails, as a call whose reply never
// came does, and the PEXPIRE is handed to the test on held, to apply when the
// test says it lands.
type lateExtendNode struct {
	*memory.Node
	ttl  time.Duration
	held chan func()
}

func (n *lateExtendNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if ttl != n.ttl {
		return n.Node.Extend(ctx, key, value, ttl)
	}
	n.held <- func() { n.Node.Extend(context.Background(), key, value, ttl) }
	<-ctx.Done()
	return false, ctx.Err()
}

// staleExtend is a lock held over three memory nodes on which an Extend of
// 200ms failed on node 2 (its PEXPIRE held back, to land when the test
// calls stale), and then an Extend of 10s, begun at longStart, was granted
// by nodes 0 and 2 (node 1 stalled through it). rival is a Client over the
// same stores. It runs in a bubble (testing/synctest).
type staleExtend struct {
	l         *redlock.Lock
	rival     *redlock.Client
	stale     func()
	longStart time.Time
}

func newStaleExtend(t *testing.T) staleExtend {
	t.Helper()
	ctx := context.Background()
	mem, _ := memNodes(3)
	late := &lateExtendNode{Node: mem[2], ttl: 200 * time.Millisecond, held: make(chan func(), 1)}
	nodes := []driver.Node{mem[0], mem[1], late}
	rival := []driver.Node{sameStore{mem[0]}, sameStore{mem[1]}, sameStore{mem[2]}}
	opts := []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100 * time.Millisecond)}
	s := staleExtend{rival: newClient(t, rival, opts...)}
	l, err := newClient(t, nodes, opts...).TryLock(ctx, "k")
	require.NoError(t, err)
	s.l = l
	synctest.Wait()

	require.NoError(t, l.Extend(ctx, 200*time.Millisecond)) // 0 and 1 grant it; 2's call fails
	s.stale = <-late.held
	time.Sleep(120 * time.Millisecond) // the failed call has returned
	synctest.Wait()

	mem[1].SetStalled(true)
	s.longStart = time.Now()
	require.NoError(t, l.Extend(ctx, 10*time.Second)) // 0 and 2 grant it
	time.Sleep(120 * time.Millisecond)
	synctest.Wait()
	mem[1].SetStalled(false)
	return s
}

// landStale lands the failed Extend's PEXPIRE on node 2, then lets the
// rival try: it must not get the lock while the holder's Until is ahead.
func (s staleExtend) landStale(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	s.stale()
	time.Sleep(250 * time.Millisecond)
	synctest.Wait()
	if l2, err := s.rival.TryLock(ctx, "k"); err == nil {
		assert.False(t, time.Now().Before(s.l.Until()),
			"double grant: a rival holds the lock while the first holder's Until is %v ahead", time.Until(s.l.Until()))
		l2.Unlock(ctx)
	}
	s.l.Unlock(ctx)
}

// An Extend of which a node call failed may still land on that node after a
// later, longer Extend, and cut the key short there. So after it, no Extend
// counts on more than its TTL: the later Extend's Until stays within the
// stale TTL from its start, and no rival gets the lock while Until is ahead.
func TestFailedExtendCapsLaterExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStaleExtend(t)
		assert.False(t, s.l.Until().After(s.longStart.Add(200*time.Millisecond)),
			"Until %v after the long Extend began, beyond the failed Extend's TTL", s.l.Until().Sub(s.longStart))
		s.landStale(t)
	})
}

// A failed Extend caps later Extends at its own TTL only: an Extend of the
// same TTL after it (as Do's extensions all are) keeps its whole validity.
func TestFailedExtendDoesNotCapItsOwnTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		mem[2].SetDown(true)
		require.NoError(t, l.Extend(ctx, 5*time.Second)) // node 2 fails
		synctest.Wait()
		mem[2].SetDown(false)
		start := time.Now()
		require.NoError(t, l.Extend(ctx, 5*time.Second))
		assert.True(t, l.Until().After(start.Add(4*time.Second)), "Until %v after the Extend began", l.Until().Sub(start))
		l.Unlock(ctx)
	})
}

// TTL with a nil context is an error, not a panic. In a bubble
// (testing/synctest): on the real clock, a machine that stalls the test past
// the default 200ms node timeout fails the TryLock.
func TestTTLNilContextIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		defer l.Unlock(t.Context())
		var nilCtx context.Context
		require.NotPanics(t, func() { _, err = l.TTL(nilCtx) })
		require.ErrorContains(t, err, "nil context")
	})
}

// grantPanics is an observer whose end of a granted attempt, or of a Lock
// that obtained the lock, panics.
type grantPanics struct {
	redlock.NopObserver
	attempt bool // the attempt's end panics, else the Lock's
}

func (o grantPanics) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	if !o.attempt {
		return ctx, nil
	}
	return ctx, func(d redlock.AttemptDone) {
		if d.Outcome == redlock.OutcomeGranted {
			panic("observer bug")
		}
	}
}

func (o grantPanics) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	if o.attempt {
		return ctx, nil
	}
	return ctx, func(d redlock.LockDone) {
		if d.Err == nil {
			panic("observer bug")
		}
	}
}

// An observer's end that panics after a grant, before the lock reaches its
// holder, does not leave the lock held: it is released, and the panic goes
// on to the caller.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestObserverPanicAfterGrantReleases(t *testing.T) {
	calls := map[string]func(context.Context, *redlock.Client) error{
		"TryLock": func(ctx context.Context, c *redlock.Client) error { _, err := c.TryLock(ctx, "k"); return err },
		"Lock":    func(ctx context.Context, c *redlock.Client) error { _, err := c.Lock(ctx, "k"); return err },
		"Do": func(ctx context.Context, c *redlock.Client) error {
			return c.Do(ctx, "k", func(context.Context) error { return nil })
		},
	}
	for name, call := range calls {
		for _, attempt := range []bool{true, false} {
			if name == "TryLock" && !attempt {
				continue // TryLock reports no Lock
			}
			t.Run(fmt.Sprintf("%s/attempt=%v", name, attempt), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem, nodes := memNodes(3)
					c := newClient(t, nodes, redlock.WithTTL(10*time.Second), redlock.WithObserver(grantPanics{attempt: attempt}))
					var recovered any
					func() {
						defer func() { recovered = recover() }()
						call(t.Context(), c)
					}()
					require.Equal(t, "observer bug", recovered, "the observer's panic goes on to the caller")
					require.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond,
						"the key is still held on %d nodes", holders(mem, "k"))
					// And the key is free for the next holder.
					c2 := newClient(t, []driver.Node{sameStore{mem[0]}, sameStore{mem[1]}, sameStore{mem[2]}})
					l, err := c2.TryLock(t.Context(), "k")
					require.NoError(t, err)
					l.Unlock(t.Context())
				})
			})
		}
	}
}

// stallSet is a node whose SETs wait until their context ends and fail, as a
// SET whose reply was lost does.
type stallSet struct{ *memory.Node }

func (n stallSet) SetNX(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// The release of a SET of the acquisition that answers late, after Unlock
// began, is repeated for the SET's TTL from its answer: the lock's own, given
// to TryLock, and not the Client's.
func TestLateSetRepeatsForTheLocksTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := []driver.Node{mem[0], mem[1], stallSet{mem[2]}}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k", redlock.WithTTL(10*time.Second))
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now().Add(10*time.Second), redlock.LateSetRepeatsUntil(l), time.Millisecond)
		synctest.Wait()
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// heldCounter counts the locks granted and not yet ended, as its observer
// sees them: +1 at a granted attempt, -1 at LockEnd.
type heldCounter struct {
	redlock.NopObserver
	held atomic.Int64
}

func (o *heldCounter) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	return ctx, func(d redlock.AttemptDone) {
		if d.Outcome == redlock.OutcomeGranted {
			o.held.Add(1)
		}
	}
}

func (o *heldCounter) LockEnd(context.Context, redlock.LockEnd) { o.held.Add(-1) }

// endPanics is an observer whose LockEnd panics.
type endPanics struct{ redlock.NopObserver }

func (endPanics) LockEnd(context.Context, redlock.LockEnd) { panic("LockEnd bug") }

// A lock released because an observer's end panicked after its grant has its
// end reported too (LockEnd, once per granted lock), so that another
// observer, which saw the grant, does not count it held for ever; and a
// LockEnd that panics there does not replace the first panic.
func TestObserverPanicAfterGrantReportsLockEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(panics, cnt redlock.Observer) []redlock.Observer
	}{
		// The ends run in the reverse order of the observers: the counter's
		// attempt end runs before the panicking one, or after it.
		{"counter after", func(p, cnt redlock.Observer) []redlock.Observer { return []redlock.Observer{p, cnt, endPanics{}} }},
		{"counter first", func(p, cnt redlock.Observer) []redlock.Observer { return []redlock.Observer{cnt, p} }},
		{"counter last", func(p, cnt redlock.Observer) []redlock.Observer { return []redlock.Observer{p, endPanics{}, cnt} }},
	} {
		for _, attempt := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/attempt=%v", tc.name, attempt), func(t *testing.T) {
				panicAfterGrantBalanced(t, tc.order(grantPanics{attempt: attempt}, &heldCounter{}))
			})
		}
	}
}

// panicAfterGrantBalanced takes a lock on a Client with observers, one of
// which panics at the grant and one of which is a *heldCounter, and checks
// that the counter ends at zero, the first panic goes on and the key is
// released.
func panicAfterGrantBalanced(t *testing.T, observers []redlock.Observer) {
	t.Helper()
	var cnt *heldCounter
	opts := []redlock.Option{redlock.WithTTL(10 * time.Second)}
	for _, o := range observers {
		if h, ok := o.(*heldCounter); ok {
			cnt = h
		}
		opts = append(opts, redlock.WithObserver(o))
	}
	mem, nodes := memNodes(3)
	c := newClient(t, nodes, opts...)
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		c.Lock(t.Context(), "k")
	}()
	assert.Equal(t, "observer bug", recovered, "the first panic goes on, not LockEnd's")
	assert.Zero(t, cnt.held.Load(), "granted and not ended, as the observer saw it")
	// Released: a quorum at once, the last node in the background.
	assert.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond)
}
