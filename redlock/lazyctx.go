package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is a context that ends at a deadline, when its parent ends,
// or when end is called, as context.WithDeadline's does, but arms no timer
// and allocates nothing until something asks for its Done channel (as a
// context derived from it does): Err and Deadline compare with the clock
// instead. A round's calls to nodes that queue use one (bounded by
// the lock's validity or expiry): a call sent at once, the common case,
// reads only its deadline, Err and values, and a round then costs no timer;
// a call that waits in a queue asks for Done, and gets the timer then.
//
// Its zero value is not usable: call init once, before any other method.
// It is safe for concurrent use after that.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time
	values   context.Context // answers first for the values it holds (see init); or nil

	mu     sync.Mutex
	real   atomic.Pointer[realDeadline] // made on demand, never changed after
	ended  atomic.Bool                  // end was called
	endErr error                        // Err once ended without real; set before ended
}

// realDeadline is the context.WithDeadline that a lazyDeadline becomes.
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

// materialize returns the context.WithDeadline that l stands for, making it
// the first time: from then on, l is that context.
func (l *lazyDeadline) materialize() context.Context {
	if r := l.real.Load(); r != nil {
		return r.ctx
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.real.Load(); r != nil {
		return r.ctx
	}
	ctx, cancel := context.WithDeadline(l.parent, l.deadline)
	if l.ended.Load() {
		cancel()
	}
	l.real.Store(&realDeadline{ctx: ctx, cancel: cancel})
	return ctx
}

// end ends l, as a context.CancelFunc does: Err then returns
// context.Canceled, unless l had already ended otherwise.
func (l *lazyDeadline) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended.Load() {
		return
	}
	if r := l.real.Load(); r != nil {
		r.cancel()
	} else if l.endErr = l.early(); l.endErr == nil {
		l.endErr = context.Canceled
	}
	l.ended.Store(true)
}

// early returns why l has ended without end: its parent's error, or
// context.DeadlineExceeded once the deadline has passed; nil if neither.
func (l *lazyDeadline) early() error {
	if err := l.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(l.deadline) {
		return context.DeadlineExceeded
	}
	return nil
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

// Err returns nil until l ends, and then why: its parent's error,
// context.DeadlineExceeded, or context.Canceled after end.
func (l *lazyDeadline) Err() error {
	if r := l.real.Load(); r != nil {
		return r.ctx.Err()
	}
	if l.ended.Load() {
		if r := l.real.Load(); r != nil { // made before end
			return r.ctx.Err()
		}
		return l.endErr
	}
	return l.early()
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
