package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/redlock"
)

// Review 2, defect 1: the Client's slots go to the attempts that wait for
// one in the order they came, whether Do's first attempts (which wait in
// the admission queue) or TryLock's and Lock's (which waited on the slots'
// channel, where a slot given back never reached them while Do's were
// queued: a storm of Do's kept them waiting until their context ended).
func TestTryLockNotStarvedByDoStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const nodeTimeout = time.Second
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout))
		for _, m := range mem {
			m.SetStalled(true) // every attempt holds its slot for the node timeout
		}
		var wg sync.WaitGroup
		for i := range 512 {
			wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("hold", i)) })
		}
		synctest.Wait() // every slot is taken

		// A TryLock comes first, then many Do's: the first slot given back
		// (at the node timeout) is the TryLock's.
		ctx, cancel := context.WithTimeout(t.Context(), 3*nodeTimeout)
		defer cancel()
		var (
			terr error
			took time.Duration
		)
		start := time.Now()
		wg.Go(func() {
			_, terr = c.TryLock(ctx, "first")
			took = time.Since(start)
		})
		synctest.Wait()
		for i := range 2000 {
			wg.Go(func() {
				_ = c.Do(t.Context(), fmt.Sprint("storm", i), func(context.Context) error { return nil }, redlock.WithMaxAttempts(1))
			})
		}
		synctest.Wait()
		wg.Wait()
		// Its attempt ran (its nodes stalled: unavailable), at its turn.
		require.ErrorIs(t, terr, redlock.ErrUnavailable, "the TryLock got a slot before its context ended: %v", terr)
		require.Equal(t, 2*nodeTimeout, took, "admitted at the first slot given back, its round then took the node timeout")
	})
}

// panicky is an Observer that panics when a Do's Lock or attempt of a key
// named "boom-lock" or "boom-attempt" starts.
type panicky struct{ redlock.NopObserver }

func (panicky) Lock(ctx context.Context, e redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	if e.Key == "boom-lock" {
		panic(errBoom)
	}
	return ctx, nil
}

func (panicky) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	if e.Key == "boom-attempt" {
		panic(errBoom)
	}
	return ctx, nil
}

// Review 2, defect 2: an observer that panics as Do's first attempt starts
// panics on Do's goroutine, where the caller can recover it (as net/http
// does for a handler), as it did before that attempt ran on the Client's
// workers: there it ended the program, with a slot the attempt never gave
// back. More panics than the Client has slots leave it working.
func TestDoObserverPanicReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithObserver(panicky{}))
		for _, key := range []string{"boom-lock", "boom-attempt"} {
			for i := range 600 {
				var got any
				func() {
					defer func() { got = recover() }()
					_ = c.Do(t.Context(), key, func(context.Context) error { return nil })
				}()
				require.Equal(t, errBoom, got, "%s %d: Do re-panics with the observer's value", key, i)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.NoError(t, c.Do(ctx, "ok", func(context.Context) error { return nil }), "the slots were given back")
		l, err := c.TryLock(ctx, "ok")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
	})
}

// Close while Do's wait in the queue for a slot (every slot held by attempts
// on stalled nodes, Do's first attempts on workers among them) and while
// others wait for a busy key: each returns
// ErrClosed once the attempts in flight give their slots back, fn never
// runs, and no goroutine is left. In a bubble (testing/synctest): on the
// real clock, a machine that stalls the test past the 200ms node timeout
// fails the TryLock of "busy", and the sleeps that let the calls take their
// slots, then queue, before Close are only as long as the machine allows.
func TestCloseWhileDoQueued(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const nodeTimeout = 200 * time.Millisecond
		c, err := redlock.New(nodes, redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		busy, err := c.TryLock(t.Context(), "busy")
		require.NoError(t, err)
		_ = busy // expires with its TTL
		for _, m := range mem {
			m.SetStalled(true)
			defer m.SetStalled(false)
		}
		var (
			wg    sync.WaitGroup
			ran   atomic.Int32
			herrs = make([]error, 512)
		)
		for i := range herrs {
			if i%2 == 0 {
				wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("hold", i)) })
				continue
			}
			wg.Go(func() { // its first attempt, on a worker, holds a slot
				herrs[i] = c.Do(t.Context(), fmt.Sprint("hold", i), func(context.Context) error {
					ran.Add(1)
					return nil
				})
			})
		}
		time.Sleep(nodeTimeout / 4) // they hold the slots
		errs := make([]error, 300)
		for i := range errs {
			key := fmt.Sprint("queued", i)
			if i%3 == 0 {
				key = "busy"
			}
			wg.Go(func() {
				ctx := t.Context()
				if i%2 == 0 {
					ctx = context.Background() // nothing but Close ends its wait
				}
				errs[i] = c.Do(ctx, key, func(context.Context) error {
					ran.Add(1)
					return nil
				})
			})
		}
		time.Sleep(nodeTimeout / 4)
		require.NoError(t, c.Close())
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("Do's still wait 30s after Close")
		}
		require.Zero(t, ran.Load(), "no fn ran")
		for i, err := range errs {
			require.ErrorIs(t, err, redlock.ErrClosed, "Do %d", i)
		}
		for i := 1; i < len(herrs); i += 2 {
			require.ErrorIs(t, herrs[i], redlock.ErrClosed, "Do %d, whose first attempt ran at Close", i)
		}
	})
}

// Do's and TryLocks queued for a slot whose context ends at the very instant
// the slots are given back (synctest's clock: the AfterFunc or the select
// that cuts a wait in the queue and the leave that admits it race): each
// returns the context's
// error, once, and no slot is lost or given twice: afterwards every slot is
// free, and more Do's than slots all get their lock.
func TestDoQueuedContextEndsAsAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const nodeTimeout = time.Second
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout))
		for round := range 5 {
			for _, m := range mem {
				m.SetStalled(true)
			}
			start := time.Now()
			var wg sync.WaitGroup
			for i := range 512 {
				wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("hold", i)) })
			}
			synctest.Wait()
			ctx, cancel := context.WithDeadline(t.Context(), start.Add(nodeTimeout))
			errs := make([]error, 600)
			for i := range errs {
				wg.Go(func() {
					if i%2 == 0 { // a TryLock waits in the same queue
						_, errs[i] = c.TryLock(ctx, fmt.Sprint("cut", i))
						return
					}
					errs[i] = c.Do(ctx, fmt.Sprint("cut", i), func(context.Context) error { return nil })
				})
			}
			wg.Wait()
			cancel()
			for i, err := range errs {
				require.ErrorIs(t, err, redlock.ErrNotObtained, "round %d, Do %d", round, i)
				require.ErrorIs(t, err, context.DeadlineExceeded, "round %d, Do %d", round, i)
			}
			for _, m := range mem {
				m.SetStalled(false)
			}
			var held atomic.Int32
			all := make(chan struct{})
			for i := range 600 {
				wg.Go(func() {
					errs[i] = c.Do(t.Context(), fmt.Sprint("after", i), func(ctx context.Context) error {
						if held.Add(1) == 600 {
							close(all)
						}
						<-all
						return nil
					})
				})
			}
			wg.Wait()
			for i, err := range errs {
				require.NoError(t, err, "round %d, Do %d after", round, i)
			}
			time.Sleep(time.Second) // the background releases
		}
	})
}

// lockDones records the ends of the Locks (Do's included).
type lockDones struct {
	redlock.NopObserver
	mu   sync.Mutex
	done []redlock.LockDone
}

func (o *lockDones) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	return ctx, func(d redlock.LockDone) {
		o.mu.Lock()
		o.done = append(o.done, d)
		o.mu.Unlock()
	}
}

// Do's attempts follow Lock's rules, its first one on a worker included:
// WithMaxAttempts counts it, the Backoff is asked for the same delays, and
// the error and the attempts reported are Lock's.
func TestDoAttemptsAsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		obs := &lockDones{}
		c := newClient(t, nodes, redlock.WithObserver(obs))
		held, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // its SET on the third node too
		require.Equal(t, 3, holders(mem, "k"))
		run := func(call func(opts ...redlock.Option) error) (error, []int) {
			var asked []int
			b := redlock.WithBackoff(func(n int) time.Duration {
				asked = append(asked, n)
				return 10 * time.Millisecond
			})
			return call(b, redlock.WithMaxAttempts(4)), asked
		}
		lerr, lasked := run(func(opts ...redlock.Option) error {
			_, err := c.Lock(t.Context(), "k", opts...)
			return err
		})
		ran := false
		derr, dasked := run(func(opts ...redlock.Option) error {
			return c.Do(t.Context(), "k", func(context.Context) error { ran = true; return nil }, opts...)
		})
		require.False(t, ran)
		require.ErrorIs(t, derr, redlock.ErrNotObtained)
		require.ErrorContains(t, derr, "gave up after 4 attempts")
		require.Equal(t, lerr.Error(), derr.Error())
		require.Equal(t, lasked, dasked, "the Backoff's delays asked")
		require.Len(t, obs.done, 2)
		require.Equal(t, 4, obs.done[0].Attempts)
		require.Equal(t, 4, obs.done[1].Attempts, "Do's Lock")
		require.NoError(t, held.Unlock(t.Context()))
	})
}
