// Package untildone runs a call that may outlive its context, such as a
// client library's command that waits for a connection whatever the
// context says, so that its caller still returns when the context ends.
package untildone

import "context"

// Do runs f on a goroutine of its own and returns what f returns, or ctx's
// error once ctx ends, whichever comes first; a result that comes with the
// end is kept. A call cut short goes on in the background until f returns,
// which f's own bounds must ensure (a client's timeouts, its Close); late,
// if not nil, is then given its result, to close a connection that came too
// late, say. When ctx cannot end (its Done is nil), f runs on the caller's
// goroutine.
func Do[T any](ctx context.Context, f func() (T, error), late func(T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: f's goroutine never waits for the caller
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // a result that came with the end
			return r.v, r.err
		default:
		}
		if late != nil {
			go func() {
				r := <-done
				late(r.v, r.err)
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}
