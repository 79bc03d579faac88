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
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Close while Do's fn runs: nothing extends the lock any more, so fn's
// context must be canceled with ErrLockLost at the latest when the lock's
// validity ends (Do's doc), not left running past it as if it still held
// the lock.
func TestReviewCloseCancelsRunningDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		const ttl = time.Second
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		require.NoError(t, err)
		holding := make(chan struct{})
		result := make(chan error, 1)
		var cause error
		go func() {
			result <- c.Do(t.Context(), "k", func(ctx context.Context) error {
				close(holding)
				select {
				case <-ctx.Done():
					cause = context.Cause(ctx)
					return ctx.Err()
				case <-time.After(3 * ttl):
					return errors.New("fn's context was not canceled within 3 TTLs of Close: fn ran on without the lock")
				}
			})
		}()
		<-holding
		require.NoError(t, c.Close())
		err = <-result
		require.NotContains(t, err.Error(), "not canceled", "Do after Close: %v", err)
		require.ErrorIs(t, cause, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrLockLost)
	})
}

// Do and Close at once: Close reads the keeper while the first Do makes it
// (run with -race).
func TestReviewCloseRacesFirstDo(t *testing.T) {
	for range 20 {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second))
		require.NoError(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				_ = c.Do(context.Background(), "k", func(context.Context) error { return nil })
			})
		}
		wg.Go(func() {
			<-start
			time.Sleep(50 * time.Microsecond)
			_ = c.Close()
		})
		close(start)
		wg.Wait()
	}
}

// Unlock waits for a slot among the rounds of TryLock: with thousands of
// acquisitions queued (each slot held for a node's answer), a release,
// which is what those acquisitions may be waiting for, waits behind all of
// them, far beyond the node timeout that bounds Unlock (its doc).
func TestReviewUnlockNotBehindAcquisitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const ttl = 10 * time.Second
		nodeTimeout := 100 * time.Millisecond
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
		l, err := c.TryLock(t.Context(), "held")
		require.NoError(t, err)
		for _, m := range mem {
			m.SetLatency(nodeTimeout / 2) // every node answers, within the node timeout
		}
		var wg sync.WaitGroup
		for i := range 4096 {
			wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("other", i)) })
		}
		time.Sleep(time.Millisecond) // the acquisitions hold or wait for their slots
		start := time.Now()
		uerr := l.Unlock(t.Context())
		took := time.Since(start)
		wg.Wait()
		require.NoError(t, uerr)
		require.LessOrEqual(t, took, nodeTimeout, "Unlock took %v behind the acquisitions in flight; its node calls take %v", took, nodeTimeout/2)
	})
}

// outcomes records the outcome of every attempt.
type outcomes struct {
	redlock.NopObserver
	mu  sync.Mutex
	got []redlock.Outcome
}

func (o *outcomes) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	return ctx, func(d redlock.AttemptDone) {
		o.mu.Lock()
		o.got = append(o.got, d.Outcome)
		o.mu.Unlock()
	}
}

// A TryLock whose context ended before any vote is an error for the
// observers, not a refusal: the wait for a slot chose at random between the
// free slot and the ended context, and in the second case the attempt was
// reported as OutcomeNotObtained (TestObserverOutcomes failed half the time).
func TestReviewCanceledAttemptIsAnError(t *testing.T) {
	_, nodes := memNodes(3)
	rec := &outcomes{}
	c := newClient(t, nodes, redlock.WithObserver(rec))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 64 {
		_, err := c.TryLock(ctx, "k")
		require.ErrorIs(t, err, context.Canceled)
	}
	require.Len(t, rec.got, 64)
	for i, o := range rec.got {
		require.Equal(t, redlock.OutcomeError, o, "attempt %d with a canceled context", i)
	}
}

// idNode is a memory node that tells its identity (driver.Identifier), or,
// while blackholed, answers nothing until the call's context ends.
type idNode struct {
	*memory.Node
	id         string
	blackholed bool
}

func (n *idNode) Identity(ctx context.Context) ([]string, error) {
	if n.blackholed {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return []string{n.id}, nil
}

// silentIDNode is a node whose SETs stall and whose identity question fails
// at once the first time (the node was down) and, from then on, is never
// answered until release is closed: asked is sent on when it is asked again.
type silentIDNode struct {
	*memory.Node
	calls   atomic.Int32
	asked   chan struct{}
	release chan struct{}
}

func (n *silentIDNode) Identity(ctx context.Context) ([]string, error) {
	if n.calls.Add(1) == 1 {
		return nil, errors.New("down")
	}
	n.asked <- struct{}{}
	select {
	case <-n.release:
	case <-ctx.Done():
	}
	return nil, errors.New("no answer")
}

// A node that does not answer (a minority, which Redlock tolerates) must not
// hold up TryLock: the identity check asked it again every second while
// holding the check's mutex, so every TryLock of the Client waited up to the
// node timeout each time, its own context ignored. Here the silent node's
// question, asked again by one TryLock, stays unanswered until the test
// ends (the node timeout is 10 minutes): the TryLocks, that one and another
// made while the question is in flight, must return first. The bound is
// only a watchdog, a minute for what takes microseconds: a TryLock that
// waits for the question never returns before it.
// (Real time: synctest cannot advance its clock past goroutines waiting for
// a mutex, so the broken code would hang a bubble rather than fail it.)
func TestReviewIdentityCheckDoesNotStall(t *testing.T) {
	t.Parallel() // waits identityRetry in real time, on nodes of its own
	const watchdog = time.Minute
	silent := &silentIDNode{Node: memory.New(), asked: make(chan struct{}, 1), release: make(chan struct{})}
	silent.SetStalled(true)
	nodes := []driver.Node{
		&idNode{Node: memory.New(), id: "server0"},
		&idNode{Node: memory.New(), id: "server1"},
		silent,
	}
	c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(10*time.Minute))
	t.Cleanup(func() { close(silent.release); silent.SetStalled(false) }) // before Close, which waits for them
	l, err := c.TryLock(t.Context(), "first")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(t.Context()))
	// The first round of questions is over (the silent node's failed at
	// once); the next TryLock past identityRetry asks the node again.
	time.Sleep(1100 * time.Millisecond)
	tryLock := func(key string) <-chan error {
		done := make(chan error, 1)
		go func() {
			l, err := c.TryLock(t.Context(), key)
			if err == nil {
				err = l.Unlock(t.Context())
			}
			done <- err
		}()
		return done
	}
	a := tryLock("a")
	select {
	case <-silent.asked:
	case <-time.After(watchdog):
		t.Fatal("the silent node was not asked its identity again past identityRetry")
	}
	b := tryLock("b") // while the question is in flight
	for _, call := range []struct {
		name string
		done <-chan error
	}{{"the TryLock that asked again", a}, {"a TryLock while the question is in flight", b}} {
		select {
		case err := <-call.done:
			require.NoError(t, err, call.name)
		case <-time.After(watchdog):
			t.Fatalf("%s waited for the silent node's identity", call.name)
		}
	}
}

// Unlock and Extend after Close: the Client's calls return ErrClosed (Close's
// doc), without a call to the closed nodes.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestReviewLockCallsAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes)
		require.NoError(t, err)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.ErrorIs(t, l.Extend(t.Context(), time.Second), redlock.ErrClosed)
		require.ErrorIs(t, l.Unlock(t.Context()), redlock.ErrClosed)
	})
}

// Many Do's, and Close while they run: every Do returns ErrLockLost (its fn's
// context canceled by Close), and nothing of the Client is left running.
func TestReviewCloseDuringManyDo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	_, nodes := memNodes(3)
	c, err := redlock.New(nodes, redlock.WithTTL(time.Second))
	require.NoError(t, err)
	const n = 64
	var holding, wg sync.WaitGroup
	holding.Add(n)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- c.Do(context.Background(), fmt.Sprint("k", i), func(ctx context.Context) error {
				holding.Done()
				<-ctx.Done()
				return nil
			})
		})
	}
	holding.Wait()
	require.NoError(t, c.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, redlock.ErrLockLost)
	}
	// A Do after Close fails at once.
	require.ErrorIs(t, c.Do(context.Background(), "k", func(context.Context) error { return nil }), redlock.ErrClosed)
}

// ends counts LockEnd events and Extend ends by key.
type ends struct {
	redlock.NopObserver
	mu      sync.Mutex
	n       map[string]int
	how     map[string]string
	extends int
}

func (o *ends) LockEnd(_ context.Context, e redlock.LockEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[e.Key]++
	o.how[e.Key] = e.How
}

func (o *ends) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(redlock.ExtendDone) {
		o.mu.Lock()
		o.extends++
		o.mu.Unlock()
	}
}

// Every lock held through Do is reported ended exactly once: one lost on the
// nodes (found by the keeper), one released by Do, one canceled by Close; and
// the keeper's extensions are reported.
func TestReviewDoLockEndOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		obs := &ends{n: map[string]int{}, how: map[string]string{}}
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		require.NoError(t, err)
		run := func(key string, wait func(ctx context.Context)) chan error {
			res := make(chan error, 1)
			held := make(chan struct{})
			go func() {
				res <- c.Do(t.Context(), key, func(ctx context.Context) error {
					close(held)
					wait(ctx)
					return nil
				})
			}()
			<-held
			return res
		}
		lost := run("lost", func(ctx context.Context) { <-ctx.Done() })
		done := run("done", func(ctx context.Context) { time.Sleep(2 * time.Second) })
		closed := run("closed", func(ctx context.Context) { <-ctx.Done() })
		for _, m := range mem {
			m.Delete("lost")
		}
		require.ErrorIs(t, <-lost, redlock.ErrLockLost)
		require.NoError(t, <-done)
		require.NoError(t, c.Close())
		require.ErrorIs(t, <-closed, redlock.ErrLockLost)
		synctest.Wait()
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Equal(t, map[string]int{"lost": 1, "done": 1, "closed": 1}, obs.n, "LockEnd per key (how: %v)", obs.how)
		require.Equal(t, redlock.EndLostExtend, obs.how["lost"])
		require.Equal(t, redlock.EndUnlocked, obs.how["done"])
		require.Positive(t, obs.extends, "the keeper's extensions are reported")
	})
}

// Do's per-call TTL and extension interval are the keeper's: the key's TTL
// on the nodes is the call's, and its extensions come at the call's interval.
func TestReviewDoPerCallTTLKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		obs := &ends{n: map[string]int{}, how: map[string]string{}}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithObserver(obs))
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			for range 10 {
				time.Sleep(time.Second)
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				for _, m := range mem {
					pttl, ok := m.PTTL("k")
					require.True(t, ok)
					require.Greater(t, pttl, time.Second, "the key's TTL is the call's (5s), not the Client's (1s)")
				}
			}
			return nil
		}, redlock.WithTTL(5*time.Second), redlock.WithExtendInterval(2*time.Second))
		require.NoError(t, err)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.InDelta(t, 5, obs.extends, 1, "10s of fn at one extension per 2s")
	})
}
