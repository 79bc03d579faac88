package redlock_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/redlock"
)

var errBoom = errors.New("boom")

// Defect 1: when fn panics or calls runtime.Goexit, Do stops extending and
// releases the lock before the panic goes on, with its original value. Each
// case runs in a bubble (testing/synctest): on the real clock, a machine that
// stalls the test past the 200ms node timeout fails the rival's TryLock, or
// an extension (and Do's lock with it) while fn sleeps.
func TestDoReleasesOnPanic(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	// inBubble runs do with a Client c whose lock of "k" do leaves in a
	// panic or a Goexit, then checks that the lock is free.
	inBubble := func(t *testing.T, do func(t *testing.T, c *redlock.Client)) {
		synctest.Test(t, func(t *testing.T) {
			mem, nodes := memNodes(3)
			opts := []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(200 * time.Millisecond), redlock.WithExtendInterval(20 * time.Millisecond)}
			c, err := redlock.New(nodes, opts...)
			require.NoError(t, err)
			defer c.Close()
			rival, err := redlock.New(nodes, opts...)
			require.NoError(t, err)
			defer rival.Close()
			do(t, c)
			synctest.Wait()
			require.Zero(t, holders(mem, "k"), "Do released the lock on every node")
			time.Sleep(100 * time.Millisecond) // several extension intervals: nothing extends it again
			rl, err := rival.TryLock(t.Context(), "k")
			require.NoError(t, err, "the lock is free after fn's exit")
			require.NoError(t, rl.Unlock(t.Context()))
		})
	}
	t.Run("panic", func(t *testing.T) {
		inBubble(t, func(t *testing.T, c *redlock.Client) {
			var got any
			func() {
				defer func() { got = recover() }() // as net/http does for a handler
				_ = c.Do(t.Context(), "k", func(ctx context.Context) error {
					time.Sleep(50 * time.Millisecond) // extended meanwhile
					panic(errBoom)
				})
			}()
			require.Equal(t, errBoom, got, "Do re-panics with fn's value")
		})
	})
	t.Run("Goexit", func(t *testing.T) {
		inBubble(t, func(t *testing.T, c *redlock.Client) {
			exited := make(chan struct{})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			go func() {
				defer close(exited)
				_ = c.Do(ctx, "k", func(ctx context.Context) error {
					time.Sleep(50 * time.Millisecond)
					runtime.Goexit()
					return nil
				})
			}()
			<-exited
		})
	})
}

// Defect 7: Do cancels fn's context within one extension interval of a loss
// (plus the duration of the extension that finds it, here none), also after
// a failed extension.
func TestDoNoticesLossWithinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			interval    = 100 * time.Millisecond
			nodeTimeout = 300 * time.Millisecond
		)
		mem, nodes := memNodes(5)
		c, err := redlock.New(nodes, redlock.WithTTL(2*time.Second), redlock.WithNodeTimeout(nodeTimeout), redlock.WithExtendInterval(interval))
		require.NoError(t, err)
		defer c.Close()
		var noticed time.Duration
		err = c.Do(t.Context(), "k", func(ctx context.Context) error {
			time.Sleep(interval + interval/2) // one extension succeeded
			for _, m := range mem[:3] {
				m.SetStalled(true) // the next one fails at the node timeout: not lost
			}
			time.Sleep(interval + nodeTimeout)
			for _, m := range mem {
				m.SetStalled(false)
				m.Delete("k") // lost, right after the failed extension
			}
			lostAt := time.Now()
			<-ctx.Done()
			noticed = time.Since(lostAt)
			assert.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
			return nil
		})
		require.ErrorIs(t, err, redlock.ErrLockLost)
		assert.LessOrEqual(t, noticed, interval, "Do noticed the loss %v after it happened: want within one extension interval", noticed)
	})
}
