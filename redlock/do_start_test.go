package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// slowLockEnd is an observer whose Lock end takes its time (it should not),
// as a pause of the process between the grant and fn would.
type slowLockEnd struct {
	redlock.NopObserver
	d time.Duration
}

func (o slowLockEnd) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	return ctx, func(redlock.LockDone) { time.Sleep(o.d) }
}

// A Do whose lock's validity ended before fn could start (here an observer
// slept past it) starts fn with its context already canceled, with
// ErrLockLost as its cause, rather than a live context until the keeper's
// timer, due at once, fires on another goroutine.
func TestDoStartsFnCanceledWhenValidityEndedBefore(t *testing.T) {
	const runs = 20
	live := 0
	for range runs {
		synctest.Test(t, func(t *testing.T) {
			_, nodes := memNodes(3)
			c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithObserver(slowLockEnd{d: 2 * time.Second}))
			err := c.Do(t.Context(), "k", func(ctx context.Context) error {
				if ctx.Err() == nil {
					live++
				} else if !errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
					t.Errorf("fn's context at its start: cause %v, want ErrLockLost", context.Cause(ctx))
				}
				return nil
			})
			if !errors.Is(err, redlock.ErrLockLost) {
				t.Errorf("Do whose lock expired before fn = %v, want ErrLockLost", err)
			}
		})
	}
	if live > 0 {
		t.Errorf("fn started %d times of %d with a live context, though the lock's validity had ended before", live, runs)
	}
}
