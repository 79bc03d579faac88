package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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
