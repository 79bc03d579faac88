package safety_test

import (
	"context"
	"sync"
	"time"
)

// soakEnd ends a soak that needs grants to check anything: at its duration
// if it has minGrants grants by then, else at the grant that makes them, and
// at limit at the latest. On a loaded machine few attempts succeed, and a
// soak of a fixed duration may end with no grant at all.
type soakEnd struct {
	duration time.Duration
	min      int
	began    time.Time
	stop     context.CancelFunc
	timer    *time.Timer

	mu sync.Mutex
	n  int
}

// newSoakEnd returns the soak's context, which ends as soakEnd says, and the
// soakEnd to tell of its grants. Call close when the soak is over.
func newSoakEnd(parent context.Context, duration, limit time.Duration, minGrants int) (context.Context, *soakEnd) {
	ctx, stop := context.WithTimeout(parent, limit)
	e := &soakEnd{duration: duration, min: minGrants, began: time.Now(), stop: stop}
	e.timer = time.AfterFunc(duration, func() {
		e.mu.Lock()
		n := e.n
		e.mu.Unlock()
		if n >= e.min {
			stop()
		}
	})
	return ctx, e
}

// granted counts a grant, and ends the soak if it makes minGrants past the
// duration.
func (e *soakEnd) granted() {
	e.mu.Lock()
	e.n++
	n := e.n
	e.mu.Unlock()
	if n >= e.min && time.Since(e.began) >= e.duration {
		e.stop()
	}
}

// close releases the soakEnd's timer and context.
func (e *soakEnd) close() {
	e.timer.Stop()
	e.stop()
}
