package batch

import (
	"context"
	"sync"
	"time"
)

// DeadlineStep is the granularity of the deadlines that calls share (see
// Deadlines): a call's is rounded up to it, so that it gets at most that
// much more than its network timeout. At 1 ms, a node under load still made
// a context (four allocations) for most of its calls.
const DeadlineStep = 5 * time.Millisecond

// Deadlines hands out contexts that end at a deadline, one per DeadlineStep,
// shared by the calls of a node whose network deadlines fall in the same
// step: under load a node sends tens of thousands of calls a second, and a
// context with a timer of its own for each, which the library watches, would
// cost most of the node's allocations. A shared context carries no values and
// is not canceled with any caller's: it is given only to calls due within
// CancelLag of a client whose calls need no values of the caller's context
// (a client the driver made), which may notice a cancellation that late.
// Each context ends at its deadline, when its timer fires, and is then
// forgotten. Its zero value is ready to use; it is safe for concurrent use.
type Deadlines struct {
	mu     sync.Mutex
	base   time.Time // a reading of the monotonic clock the steps count from
	step   int64     // the step of ctx: its deadline is base + step×DeadlineStep
	ctx    context.Context
	cancel context.CancelFunc // never called: ctx ends at its deadline
}

// At returns a context that ends at t rounded up to a DeadlineStep.
func (d *Deadlines) At(t time.Time) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base.IsZero() {
		d.base = t
	}
	// Rounded up, also before the base: Go's division truncates toward
	// zero, which is rounding up only for a negative offset.
	off := t.Sub(d.base)
	step := int64(off / DeadlineStep)
	if off > time.Duration(step)*DeadlineStep {
		step++
	}
	if d.ctx == nil || step != d.step {
		d.step = step
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.base.Add(time.Duration(step)*DeadlineStep))
	}
	return d.ctx
}

// Bound returns ctx bounded by the network timeout d from now, and the
// function that releases it (nil when there is none): ctx itself when it
// ends first; when share is set and d allows (d + DeadlineStep within
// CancelLag), a context of d's shared by calls (see At), or ctx itself if
// that one would end after ctx; or else a context of its own, derived from
// ctx. share is for a client that needs no values of the caller's context
// (one the driver made).
func (d *Deadlines) Bound(ctx context.Context, timeout time.Duration, share bool) (context.Context, context.CancelFunc) {
	t := time.Now().Add(timeout)
	dl, ok := ctx.Deadline()
	if ok && !dl.After(t) {
		return ctx, nil
	}
	if share && timeout+DeadlineStep <= CancelLag {
		s := d.At(t)
		if sdl, _ := s.Deadline(); ok && !dl.After(sdl) {
			return ctx, nil // ends before the shared deadline, rounded up, would
		}
		return s, nil
	}
	return context.WithDeadline(ctx, t)
}
