package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Do waits for the lock named key as Lock does, runs fn while holding it, and
// unlocks when fn returns. While fn runs, the lock is extended in the
// background to the Client's TTL every WithExtendInterval (default TTL/3).
// fn's context is canceled, with ErrLockLost as its cause
// (context.Cause), the moment the lock is lost or its validity ends without a
// successful extension; fn must then stop acting on the protected resource.
//
// Do returns fn's error, joined with ErrLockLost when the lock was lost while
// fn ran or was no longer held by a quorum when Do released it. When the lock
// was never obtained, it returns Lock's error and fn does not run.
func (c *Client) Do(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	return c.observedDo(ctx, key, fn)
}

func (c *Client) do(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	if fn == nil {
		return errors.New("redlock: Do with a nil function")
	}
	l, err := c.Lock(ctx, key)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.keepAlive(ctx, l, stop, cancel) })

	ferr := fn(fctx)

	close(stop)
	wg.Wait()
	lost := errors.Is(context.Cause(fctx), ErrLockLost)
	uerr := l.Unlock(context.WithoutCancel(ctx))
	if lost || errors.Is(uerr, ErrLockLost) {
		return errors.Join(ferr, ErrLockLost)
	}
	return ferr
}

// keepAlive extends l every c.extendEvery until stop is closed, and cancels
// fn's context with ErrLockLost as soon as l is done. A failed extension that
// did not find the lock lost is retried at shorter intervals while validity
// lasts.
func (c *Client) keepAlive(ctx context.Context, l *Lock, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	ectx := context.WithoutCancel(ctx) // extend even while fn winds down after a cancel
	done := l.Done()
	timer := time.NewTimer(c.extendEvery)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-done:
			cancel(ErrLockLost)
			return
		case <-timer.C:
			if err := l.Extend(ectx, c.ttl); err != nil {
				timer.Reset(max(c.extendEvery/4, c.nodeTimeout))
			} else {
				timer.Reset(c.extendEvery)
			}
		}
	}
}
