package redlock_test

import (
	"context"
	"errors"
	"log"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// captureLog sends the standard logger's output to a buffer until the test
// ends.
func captureLog(t *testing.T) *syncbuf.Buffer {
	b := &syncbuf.Buffer{}
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(b)
	t.Cleanup(func() { log.SetOutput(out); log.SetFlags(flags) })
	return b
}

// backgroundPanics panics in the methods that the Client calls on its own
// goroutines (or amid a round's bookkeeping): the keeper's Extend, its end,
// LockEnd and NodeCall, as chosen.
type backgroundPanics struct {
	redlock.NopObserver
	extend, extendEnd, lockEnd, nodeCall bool
}

func (o backgroundPanics) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	if o.extend {
		panic("observer bug in Extend")
	}
	if o.extendEnd {
		return ctx, func(redlock.ExtendDone) { panic("observer bug in Extend's end") }
	}
	return ctx, nil
}

func (o backgroundPanics) LockEnd(context.Context, redlock.LockEnd) {
	if o.lockEnd {
		panic("observer bug in LockEnd")
	}
}

func (o backgroundPanics) NodeCall(context.Context, redlock.NodeCall) {
	if o.nodeCall {
		panic("observer bug in NodeCall")
	}
}

// A panic of an observer's on a goroutine of the Client (the keeper's
// extensions, Done's timer) or amid a round's bookkeeping (NodeCall) is
// recovered and logged: the process goes on, Do's lock is extended and
// released, and nothing is left held. Without the recovery the test binary
// dies of the panic on the keeper's timer goroutine.
func TestObserverPanicsOnClientGoroutinesAreRecovered(t *testing.T) {
	logs := captureLog(t)
	for _, tc := range []struct {
		name   string
		obs    backgroundPanics
		method string
	}{
		{"Extend", backgroundPanics{extend: true}, "Observer.Extend "},
		{"ExtendEnd", backgroundPanics{extendEnd: true}, "Observer.Extend's end"},
		{"NodeCall", backgroundPanics{nodeCall: true}, "Observer.NodeCall"},
	} {
		// In a bubble (testing/synctest): the 300 ms TTL's extensions every
		// 100 ms, with 30 ms node timeouts, on in-process nodes are margins
		// a loaded machine's real clock can pass (an extension that came
		// after the keys expired found them gone: "lock lost, 0 of 3 nodes
		// agreed (2 refused)").
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(300*time.Millisecond), redlock.WithObserver(tc.obs))
				err := c.Do(t.Context(), "k", func(ctx context.Context) error {
					select { // three extensions at TTL/3
					case <-time.After(450 * time.Millisecond):
						return nil
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				})
				require.NoError(t, err, "Do's lock must be extended and released as without the observer")
				assert.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond,
					"released on every node")
				assert.Contains(t, logs.String(), "panic in "+tc.method)
				assert.Contains(t, logs.String(), "observer_goroutines_test.go", "the panic's stack is logged")
			})
		})
	}
	t.Run("LockEnd", func(t *testing.T) {
		// Done's timer reports the end of a lock whose validity ran out.
		// In a bubble (testing/synctest): a 100 ms TTL gives 10 ms node
		// timeouts, which a loaded machine's real clock can pass.
		synctest.Test(t, func(t *testing.T) {
			_, nodes := memNodes(3)
			c := newClient(t, nodes, redlock.WithTTL(100*time.Millisecond), redlock.WithObserver(backgroundPanics{lockEnd: true}))
			l, err := c.TryLock(t.Context(), "k")
			require.NoError(t, err)
			<-l.Done()
			synctest.Wait()
			require.Contains(t, logs.String(), "panic in Observer.LockEnd")
		})
	})
	t.Run("NodeCallOneNode", func(t *testing.T) {
		// With one node the call runs on the caller's goroutine, amid
		// the round's bookkeeping, which a panic must not cut.
		mem, nodes := memNodes(1)
		c := newClient(t, nodes, redlock.WithObserver(backgroundPanics{nodeCall: true}))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		assert.Zero(t, holders(mem, "k"))
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Close still waits for a call whose observer panicked")
		}
	})
}

// unlockStartPanics panics when an Unlock starts.
type unlockStartPanics struct{ redlock.NopObserver }

func (unlockStartPanics) Unlock(context.Context, redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	panic("observer bug in Unlock")
}

// An observer whose Unlock panics does not leave the lock held for its TTL:
// it is released, and the panic goes on to the caller (of Unlock, or of Do,
// whose lock nobody else could release).
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestObserverUnlockPanicReleases(t *testing.T) {
	for _, via := range []string{"Unlock", "Do"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithObserver(unlockStartPanics{}))
				var pv any
				func() {
					defer func() { pv = recover() }()
					if via == "Do" {
						_ = c.Do(t.Context(), "k", func(context.Context) error { return nil })
						return
					}
					l, err := c.TryLock(t.Context(), "k")
					require.NoError(t, err)
					_ = l.Unlock(t.Context())
				}()
				assert.Equal(t, "observer bug in Unlock", pv)
				assert.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond,
					"the key is left on the nodes for its TTL")
			})
		})
	}
}

// Do reports ErrLockLost when the lock's validity ended while fn ran, also
// when the caller had canceled Do's context before: fn's context then has
// the caller's cancel as its cause, not the loss. Here the extensions fail
// (two of three nodes down) until the validity has ended, and the nodes come
// back before fn returns, while they still hold the key (the validity ends a
// drift before the key does), so that Unlock finds a quorum.
//
// It runs in a bubble (testing/synctest): with 50 ms node timeouts on the
// real clock a loaded machine can fail Do's acquisition, and its sleep must
// end between the validity's end and the keys'.
func TestDoLostAfterCallersCancel(t *testing.T) {
	for _, cancelFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			mem, nodes := memNodes(3)
			c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithDriftFactor(0.6),
				redlock.WithNodeTimeout(50*time.Millisecond))
			ctx, cancel := context.WithCancel(t.Context())
			err := c.Do(ctx, "k", func(fctx context.Context) error {
				if cancelFirst {
					cancel()
				}
				mem[0].SetDown(true)
				mem[1].SetDown(true)
				time.Sleep(500 * time.Millisecond) // the validity ends at about 400ms, the keys at 1s
				mem[0].SetDown(false)
				mem[1].SetDown(false)
				return nil
			})
			cancel()
			assert.True(t, errors.Is(err, redlock.ErrLockLost), "cancelFirst=%v: Do returned %v, want ErrLockLost", cancelFirst, err)
		})
	}
}

// Close wakes the Locks that wait for a key, the one between its attempts
// and the one waiting for its turn behind it: both return ErrClosed at once,
// not after the Backoff's next delay.
func TestCloseWakesLockWaiters(t *testing.T) {
	// In a bubble: Close comes once both Locks are durably blocked in
	// their wait (synctest.Wait), not after a guessed real-clock sleep.
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
		require.NoError(t, err)
		_, err = c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := c.Lock(context.Background(), "k")
				errs <- err
			}()
		}
		synctest.Wait() // both wait
		require.Empty(t, errs, "a Lock returned before Close")
		require.NoError(t, c.Close())
		for range 2 {
			select {
			case err := <-errs:
				assert.ErrorIs(t, err, redlock.ErrClosed)
			case <-time.After(5 * time.Second): // the bubble's clock: before the Backoff's minute
				t.Fatal("a Lock still waits after Close")
			}
		}
	})
}

// extendCounter counts the starts and ends of Extends it sees.
type extendCounter struct {
	redlock.NopObserver
	starts, ends atomic.Int32
}

func (o *extendCounter) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	o.starts.Add(1)
	return ctx, func(redlock.ExtendDone) { o.ends.Add(1) }
}

// With two observers, one whose Extend start panics on the keeper's
// goroutine: the other sees the end of every Extend it saw start.
// It runs in a bubble (testing/synctest): a 300 ms TTL gives 30 ms node
// timeouts, which a loaded machine's real clock can pass.
func TestKeeperExtendPanicKeepsOtherObserversEnds(t *testing.T) {
	captureLog(t)
	for _, order := range []string{"counter first", "panicking first"} {
		synctest.Test(t, func(t *testing.T) {
			counter := &extendCounter{}
			obs := []redlock.Option{redlock.WithObserver(counter), redlock.WithObserver(backgroundPanics{extend: true})}
			if order == "panicking first" {
				obs[0], obs[1] = obs[1], obs[0]
			}
			_, nodes := memNodes(3)
			c := newClient(t, nodes, append(obs, redlock.WithTTL(300*time.Millisecond))...)
			require.NoError(t, c.Do(t.Context(), "k", func(context.Context) error {
				time.Sleep(450 * time.Millisecond) // three extensions at TTL/3
				return nil
			}))
			require.NoError(t, c.Close()) // waits for extensions in flight
			assert.NotZero(t, counter.starts.Load(), order)
			assert.Equal(t, counter.starts.Load(), counter.ends.Load(), "%s: each observer sees the end of what it saw start", order)
		})
	}
}

// Done, on the caller's goroutine, reports the end of a lock whose validity
// ran out: a LockEnd panic there goes on to the caller (only Done's timer,
// a goroutine of the Client, recovers it).
// It runs in a bubble (testing/synctest): a 50 ms TTL gives 5 ms node
// timeouts, which a loaded machine's real clock can pass.
func TestDoneLockEndPanicGoesOnToCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(50*time.Millisecond), redlock.WithObserver(backgroundPanics{lockEnd: true}))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		time.Sleep(150 * time.Millisecond) // the validity ended; no timer armed yet
		assert.PanicsWithValue(t, "observer bug in LockEnd", func() { <-l.Done() })
	})
}
