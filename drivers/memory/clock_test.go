package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// A FakeClock's Sleep of a negative duration returns at once, as a Clock's
// Sleep (and time.Sleep) does, without moving the clock: it turned the
// clock back by that much, expiring nothing and reviving expired keys'
// time. Advance of a negative duration still turns it back: a clock jump.
func TestFakeClockSleepNeverTurnsBack(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := memory.NewFakeClock(start)
	for _, d := range []time.Duration{-time.Hour, -1, 0} {
		if err := c.Sleep(context.Background(), d); err != nil {
			t.Fatalf("Sleep(%v) = %v", d, err)
		}
		if got := c.Now(); !got.Equal(start) {
			t.Fatalf("after Sleep(%v) the clock reads %v, want %v: a sleep of no time does not move it", d, got, start)
		}
	}
	if err := c.Sleep(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("after Sleep(1s) the clock reads %v, want %v", got, start.Add(time.Second))
	}
	c.Advance(-time.Minute)
	if got := c.Now(); !got.Equal(start.Add(time.Second - time.Minute)) {
		t.Fatalf("after Advance(-1m) the clock reads %v, want %v", got, start.Add(time.Second-time.Minute))
	}
}
