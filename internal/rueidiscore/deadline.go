package rueidiscore

import (
	"context"
	"sync"
	"time"
)

// deadlineStep is the granularity of the deadlines that calls share (see
// deadlines): a call's is rounded up to it, so that it gets at most that
// much more than its network timeout. At 1 ms, a node under load still made
// a context (four allocations) for most of its calls.
const deadlineStep = 5 * time.Millisecond

// deadlines hands out contexts that end at a deadline, one per deadlineStep,
// shared by the calls of a node whose network deadlines fall in the same
// step: under load a node sends tens of thousands of calls a second, and a
// context with a timer of its own for each, which the library watches, would
// cost most of the node's allocations. A shared context carries no values and
// is not canceled with any caller's: it is given only to calls due within
// batch.CancelLag, which may notice a cancellation that late (see node.call).
// Each context ends at its deadline, when its timer fires, and is then
// forgotten.
type deadlines struct {
	mu     sync.Mutex
	base   time.Time // a reading of the monotonic clock the steps count from
	step   int64     // the step of ctx: its deadline is base + step×deadlineStep
	ctx    context.Context
	cancel context.CancelFunc // never called: ctx ends at its deadline
}

// at returns a context that ends at t rounded up to a deadlineStep.
func (d *deadlines) at(t time.Time) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.base.IsZero() {
		d.base = t
	}
	step := (int64(t.Sub(d.base)) + int64(deadlineStep) - 1) / int64(deadlineStep)
	if d.ctx == nil || step != d.step {
		d.step = step
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.base.Add(time.Duration(step)*deadlineStep))
	}
	return d.ctx
}
