package safety_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// simClock is a node's clock in the simulation: it runs at rate times the
// bubble's virtual time (a rate off by less than the drift factor is a fault
// Redlock tolerates), and Step makes it jump forward (a fault it does not).
// Keys expire by it; waits (the node's latency) take virtual time.
type simClock struct {
	base   time.Time // virtual time when the clock was made
	rate   float64
	offset atomic.Int64 // nanoseconds stepped forward
}

var _ memory.Clock = (*simClock)(nil)

func newSimClock(rate float64) *simClock {
	return &simClock{base: time.Now(), rate: rate}
}

// Now returns base + elapsed*rate + the steps taken.
func (c *simClock) Now() time.Time {
	elapsed := time.Since(c.base)
	return c.base.Add(time.Duration(float64(elapsed)*c.rate) + time.Duration(c.offset.Load()))
}

// Sleep waits d of virtual time or until ctx ends.
func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Step moves the clock forward by d at once, as an NTP step or an operator
// setting the time does: keys expire early.
func (c *simClock) Step(d time.Duration) { c.offset.Add(int64(d)) }

// real converts a duration read on this clock into virtual time, ignoring
// steps to come.
func (c *simClock) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.rate)
}

func TestSimClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := newSimClock(1.01)
		start := fast.Now()
		time.Sleep(10 * time.Second)
		if got, want := fast.Now().Sub(start), 10100*time.Millisecond; got != want {
			t.Errorf("a clock at rate 1.01 moved %v in 10s of virtual time, want %v", got, want)
		}
		if got := fast.real(1010 * time.Millisecond); got != time.Second {
			t.Errorf("real(1.01s) = %v, want 1s", got)
		}
		fast.Step(time.Minute)
		if got, want := fast.Now().Sub(start), time.Minute+10100*time.Millisecond; got != want {
			t.Errorf("after a 1m step the clock moved %v, want %v", got, want)
		}
		before := time.Now()
		if err := fast.Sleep(t.Context(), time.Second); err != nil || time.Since(before) != time.Second {
			t.Errorf("Sleep(1s) took %v of virtual time and returned %v", time.Since(before), err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := fast.Sleep(ctx, time.Second); err != context.Canceled {
			t.Errorf("Sleep with a canceled context returned %v", err)
		}
	})
}
