package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// A key expires as in Redis 7, which keeps it through the millisecond of
// its expiry time (keyIsExpired: now > when, in whole milliseconds): a key
// set with PX 100 at t is still there at t+100ms, with a PTTL of 0, and gone
// 1ms later; a key set within a millisecond counts its TTL from that
// millisecond's start, as Redis' mstime does. Observed on redis-server
// 7.0.15 (EXISTS in a script that also reads TIME and PEXPIRETIME, key set
// with PX 3, 300 rounds): the key existed in 1,600 samples whose TIME was
// its PEXPIRETIME's millisecond, and was never gone in one. The memory node
// expired the key at t+100ms exactly, a millisecond before Redis does.
func TestExpiryMatchesRedisAtTheBoundary(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		offset time.Duration // of the SET within its millisecond
	}{
		{"whole_ms", 0},
		{"within_ms", 700 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := memory.NewFakeClock(base.Add(tc.offset))
			n := memory.New(memory.WithClock(clock))
			if ok, err := n.SetNX(ctx, "k", "v", 100*time.Millisecond); !ok || err != nil {
				t.Fatalf("SetNX(ttl=100ms) = %v, %v; want true, nil", ok, err)
			}
			// To the expiry time: 100ms after the start of the SET's
			// millisecond.
			clock.Advance(100*time.Millisecond - tc.offset)
			if d, ok := n.PTTL("k"); !ok || d != 0 {
				t.Errorf("PTTL at the expiry time (SET + 100ms, at %v) = %v, %v; want 0, true, as Redis' PTTL", clock.Now().Sub(base), d, ok)
			}
			if d, ok, err := n.TTL(ctx, "k", "v"); !ok || d != 0 || err != nil {
				t.Errorf("TTL at the expiry time = %v, %v, %v; want 0, true, nil", d, ok, err)
			}
			clock.Advance(999 * time.Microsecond) // the end of that millisecond
			if ok, err := n.SetNX(ctx, "k", "w", time.Minute); ok || err != nil {
				t.Errorf("SetNX in the expiry time's millisecond (at %v) = %v, %v; want false, nil: Redis still holds the key", clock.Now().Sub(base), ok, err)
			}
			if ok, err := n.Extend(ctx, "k", "v", 100*time.Millisecond); !ok || err != nil {
				t.Errorf("Extend in the expiry time's millisecond = %v, %v; want true, nil", ok, err)
			}
			clock.Advance(100 * time.Millisecond) // the extension's last millisecond
			if !n.Holds("k") {
				t.Errorf("key gone at its extended expiry time's millisecond (at %v)", clock.Now().Sub(base))
			}
			clock.Advance(time.Microsecond)
			if n.Holds("k") {
				t.Errorf("key still held after its extended expiry time's millisecond (at %v)", clock.Now().Sub(base))
			}
			if ok, err := n.SetNX(ctx, "k", "w", time.Minute); !ok || err != nil {
				t.Errorf("SetNX once the key expired = %v, %v; want true, nil", ok, err)
			}
		})
	}
}
