package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is a context that ends at a deadline, when its parent ends,
// or when end is called, as context.WithDeadline's does, but arms no timer
// and allocates nothing until something asks for its Done channel (as a
// context derived from it does): Err and Deadline compare with the clock
// instead. A round's calls to nodes that queue use one (bounded by
// the lock's validity, or the key's end: see Lock.keyEndLocked): a call sent at once, the common case,
// reads only its deadline, Err and values, and a round then costs no timer;
// a call that waits in a queue asks for Done, and gets the timer then.
//
// Its zero value is not usable: call init once, before any other method.
// It is safe for concurrent use after that.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time
	values   context.Context // answers first for the values it holds (see init); or nil

	mu   sync.Mutex
	real atomic.Pointer[realDeadline] // made on demand, never changed after
	err  atomic.Pointer[error]        // the first error Err returned, kept: Err never changes after
}

// realDeadline is the context that a lazyDeadline becomes.
type realDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// init sets the parent, the deadline and values, nil or a context without
// cancellation or deadline whose values l has over its parent's (a round's
// network timeout, made once per Client: no context per round carries it).
func (l *lazyDeadline) init(parent context.Context, deadline time.Time, values context.Context) {
	l.parent, l.deadline, l.values = parent, deadline, values
}

// keep records err as l's error unless one is already, and returns l's
// error.
func (l *lazyDeadline) keep(err error) error {
	if l.err.CompareAndSwap(nil, keptErr(err)) {
		return err
	}
	return *l.err.Load()
}

// The errors that lazyDeadlines keep most, each behind a pointer made once:
// every round ends its contexts (end: Canceled), and keeping the error
// allocated a pointer to it, twice per lone lock+unlock.
var (
	canceledErr = context.Canceled
	deadlineErr = context.DeadlineExceeded
)

// keptErr returns a pointer to err, for keep: a shared one for the context
// errors, a new one for the others (a parent's error of its own).
func keptErr(err error) *error {
	switch err {
	case context.Canceled:
		return &canceledErr
	case context.DeadlineExceeded:
		return &deadlineErr
	}
	p := new(error)
	*p = err
	return p
}

// materialize returns the context that l stands for, making it the first
// time: a context.WithDeadline, from then on l's Done; or, when l has ended
// already, a context of the parent's values, ended already, whose error is
// l's (a context.WithDeadline made then could say another: its deadline may
// have passed since l was canceled).
func (l *lazyDeadline) materialize() context.Context {
	if r := l.real.Load(); r != nil {
		return r.ctx
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.real.Load(); r != nil {
		return r.ctx
	}
	var r realDeadline
	switch err := l.Err(); {
	case err == nil:
		r.ctx, r.cancel = context.WithDeadline(l.parent, l.deadline)
	case errors.Is(err, context.DeadlineExceeded):
		r.ctx, r.cancel = context.WithDeadline(context.WithoutCancel(l.parent), time.Time{})
	default:
		r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(l.parent))
		r.cancel()
	}
	l.real.Store(&r)
	return r.ctx
}

// end ends l, as a context.CancelFunc does: Err then returns
// context.Canceled, unless l had already ended otherwise.
func (l *lazyDeadline) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Err() == nil {
		l.keep(context.Canceled)
	}
	if r := l.real.Load(); r != nil {
		r.cancel()
	}
}

// Deadline returns the earlier of l's deadline and its parent's.
func (l *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := l.parent.Deadline(); ok && d.Before(l.deadline) {
		return d, true
	}
	return l.deadline, true
}

// Done returns a channel closed when l ends; the first call arms the timer.
func (l *lazyDeadline) Done() <-chan struct{} { return l.materialize().Done() }

// Err returns nil until l ends, and then why, the same from then on: its
// parent's error, context.DeadlineExceeded, or context.Canceled after end.
// Until Done was asked for, it compares with the clock.
func (l *lazyDeadline) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	if r := l.real.Load(); r != nil {
		if err := r.ctx.Err(); err != nil {
			return l.keep(err)
		}
		return nil
	}
	if err := l.parent.Err(); err != nil {
		return l.keep(err)
	}
	// time.Until reads the monotonic clock alone (one read, where
	// time.Now makes two, for the wall clock too: 40 against 110-160ns on
	// a virtual machine), as the deadline has a monotonic reading.
	if time.Until(l.deadline) <= 0 {
		return l.keep(context.DeadlineExceeded)
	}
	return nil
}

// Value returns the value for key of l's values, else its parent's, or
// once l has become a context.WithDeadline, that context's: a context
// derived from l (with context.WithCancel and the like), which asks for Done
// first, then finds the context that closes it and registers there, as with
// any context of package context, rather than start a goroutine to watch
// Done.
func (l *lazyDeadline) Value(key any) any {
	if l.values != nil {
		if v := l.values.Value(key); v != nil {
			return v
		}
	}
	if r := l.real.Load(); r != nil {
		return r.ctx.Value(key)
	}
	return l.parent.Value(key)
}

// String names l for debugging, as context.WithDeadline's does.
func (l *lazyDeadline) String() string {
	return "redlock.lazyDeadline(" + l.deadline.String() + ")"
}
