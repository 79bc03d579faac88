package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Do waits for the lock named key as Lock does, runs fn while holding it, and
// unlocks when fn returns. While fn runs, the lock is extended in the
// background to the TTL: each extension starts at most one
// WithExtendInterval (default TTL/3) after the previous one ended, and a
// quarter of it after a failed one.
//
// fn's context is canceled, with ErrLockLost as its cause (context.Cause),
// when the lock is no longer held: at once when its validity (Until) ends
// without a successful extension, and otherwise when an extension finds it
// lost. A loss on the nodes (a key evicted or expired early, a node
// restarted empty) is therefore noticed within one extension interval plus
// the time of the extension that finds it (at most the node timeout), or
// within that plus one more extension when an extension was in flight at
// the loss. fn must then stop acting on the protected resource.
//
// On every exit of fn, a panic and runtime.Goexit included, Do stops
// extending and releases the lock on the nodes, bounded by the node timeout;
// a panic then goes on with its original value.
//
// Do returns fn's error, joined with ErrLockLost when the lock was lost while
// fn ran or was no longer held by a quorum when Do released it. When the lock
// was never obtained, it returns Lock's error and fn does not run.
//
// opts apply to this call only: WithTTL (which also sets the default
// extension interval to a third of it, unless the Client was given
// WithExtendInterval), WithBackoff, WithMaxAttempts and WithExtendInterval.
// The extension interval plus the node timeout must be shorter than the TTL
// less the drift allowance.
func (c *Client) Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return errors.New("redlock: Do with a nil function")
	}
	cc, err := c.callOptions("Do", doOptions, opts)
	if err != nil {
		return err
	}
	return c.observedDo(ctx, key, cc, fn)
}

// do is Do once its options are read.
func (c *Client) do(ctx context.Context, key string, cc callConfig, fn func(ctx context.Context) error) error {
	l, err := c.observedLock(ctx, key, cc)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	// Extensions go on while fn winds down after a cancel, and end with Do.
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.keepAlive(ectx, l, cc, stop, cancel) })
	// finish stops the extensions and releases the lock. Deferred, it runs
	// when fn panics or calls runtime.Goexit too, which then go on.
	finished := false
	finish := func() (lost bool, uerr error) {
		finished = true
		close(stop)
		ecancel() // an extension in flight is moot: the release follows
		wg.Wait()
		lost = errors.Is(context.Cause(fctx), ErrLockLost)
		cancel(nil)
		return lost, l.Unlock(context.WithoutCancel(ctx))
	}
	defer func() {
		if !finished {
			finish()
		}
	}()

	ferr := fn(fctx)

	lost, uerr := finish()
	if lost || errors.Is(uerr, ErrLockLost) {
		return errors.Join(ferr, ErrLockLost)
	}
	return ferr
}

// keepAlive extends l to cc.ttl until stop is closed, and cancels fn's
// context with ErrLockLost as soon as l is done. Each extension starts at
// most cc.extendEvery after the previous one ended; a failed extension that
// did not find the lock lost is retried after a quarter of that, while
// validity lasts.
func (c *Client) keepAlive(ectx context.Context, l *Lock, cc callConfig, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	done := l.Done()
	timer := time.NewTimer(cc.extendEvery)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-done:
			cancel(ErrLockLost)
			return
		case <-timer.C:
			if err := l.Extend(ectx, cc.ttl); err != nil {
				timer.Reset(max(cc.extendEvery/4, time.Millisecond))
			} else {
				timer.Reset(cc.extendEvery)
			}
		}
	}
}
