package memory

import (
	"context"
	"sync"
	"time"
)

// Clock tells a node the time, by which its keys expire, and waits for it.
type Clock interface {
	// Now returns the current time, by which keys expire.
	Now() time.Time
	// Sleep waits d or until ctx ends, whichever is first, and returns
	// ctx.Err() if ctx ended.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx ends.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// FakeClock is a Clock that moves only when told to. Sleep advances it
// instead of waiting, so a simulation runs without real delays.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock set to t.
func NewFakeClock(t time.Time) *FakeClock { return &FakeClock{now: t} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d: forward, or back for a negative d (a jump
// of the clock, as a node's may make).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Sleep advances the clock by d at once, unless ctx has ended. A d of zero
// or less does not move it, as time.Sleep does not wait: a sleep never
// turns the clock back.
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.Advance(d)
	}
	return nil
}
