package redlock

import (
	"context"
	"errors"
)

// Do waits for the lock named key as Lock does, runs fn while holding it, and
// unlocks when fn returns. While fn runs, the lock is extended in the
// background to the TTL: each extension starts at most one
// WithExtendInterval (default TTL/3) after the previous one ended, and a
// quarter of it after a failed one.
//
// The extensions are the Client's work, not the call's: one scheduler per
// Client keeps the locks held through Do in a heap, sends the extensions due
// within a few milliseconds of each other to every node together (a
// pipelining node sends them as a few batches, before the acquisitions that
// wait in its queue), and costs neither a goroutine nor a timer per lock.
//
// fn's context is canceled, with ErrLockLost as its cause (context.Cause),
// when the lock is no longer held: at once when its validity (Until) ends
// without a successful extension, and otherwise when an extension finds it
// lost. A loss on the nodes (a key evicted or expired early, a node
// restarted empty) is therefore noticed within one extension interval plus
// the time of the extension that finds it (at most the node timeout), or
// within that plus one more extension when an extension was in flight at
// the loss. Close cancels it too, at once, since nothing extends the lock
// after it. fn must then stop acting on the protected resource.
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
	if c.obs == nil {
		return c.do(ctx, key, cc, fn)
	}
	return c.observedDo(ctx, key, cc, fn)
}

// do is Do once its options are read.
//
// While fn runs, the lock is held by this goroutine, which may be one of
// tens of thousands: its stack below fn is kept small (the state lives in
// the kept entry, the acquisition and the release run in functions that
// have returned by then), so that the runtime can shrink the stack that the
// acquisition grew to a few kilobytes.
func (c *Client) do(ctx context.Context, key string, cc callConfig, fn func(ctx context.Context) error) error {
	e, err := c.doLock(ctx, key, cc)
	if err != nil {
		return err
	}
	// finish stops the extensions and releases the lock. Deferred, it runs
	// when fn panics or calls runtime.Goexit too, which then go on.
	defer e.finishOnce()
	return e.done(fn(e.fctx))
}

// doLock acquires the lock for Do and hands it to the Client's keeper, which
// extends it until Do is done with it.
//
//go:noinline
func (c *Client) doLock(ctx context.Context, key string, cc callConfig) (*kept, error) {
	l, err := c.observedLock(ctx, key, cc)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	// The Client's keeper extends the lock; extensions go on while fn
	// winds down after a cancel, and end with Do.
	k := c.keeperOf()
	e := k.add(context.WithoutCancel(ctx), l, cc.ttl, cc.extendEvery, cancel)
	e.fctx = fctx
	return e, nil
}

// finishOnce finishes Do's hold of e's lock unless done did: when fn
// panicked or called runtime.Goexit.
func (e *kept) finishOnce() {
	if !e.finished {
		e.finish()
	}
}

// done finishes Do's hold of e's lock after fn returned ferr, and returns
// Do's error: ferr, joined with ErrLockLost when the lock was lost while fn
// ran or was not released by a quorum.
//
//go:noinline
func (e *kept) done(ferr error) error {
	lost, uerr := e.finish()
	if lost || errors.Is(uerr, ErrLockLost) {
		return errors.Join(ferr, ErrLockLost)
	}
	return ferr
}

// finish stops the extensions of e's lock and releases it. It reports
// whether the lock was found lost while fn ran, and Unlock's error.
func (e *kept) finish() (lost bool, uerr error) {
	e.finished = true
	e.l.c.keeperOf().remove(e) // an extension in flight is moot: the release follows
	lost = errors.Is(context.Cause(e.fctx), ErrLockLost)
	e.cancel(nil)
	return lost, e.l.Unlock(e.ectx)
}
