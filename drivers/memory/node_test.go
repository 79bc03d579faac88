package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

// A TTL of zero or less is refused, as Redis refuses SET NX PX 0 (and a
// negative PX) with "ERR invalid expire time": (true, nil) would say that a
// key was set which no call can see.
func TestSetNXRefusesNonPositiveTTL(t *testing.T) {
	ctx := context.Background()
	n := memory.New()
	for _, ttl := range []time.Duration{0, -time.Second} {
		if ok, err := n.SetNX(ctx, "k", "v", ttl); ok || err == nil {
			t.Errorf("SetNX(ttl=%v) = %v, %v; want false and an error, as Redis answers SET NX PX %d", ttl, ok, err, driver.Milliseconds(ttl))
		}
		if ok, _, err := n.SetNXFence(ctx, "k", "v", ttl, driver.FenceKey("k")); ok || err == nil {
			t.Errorf("SetNXFence(ttl=%v) = %v, %v; want false and an error, as Redis answers SET NX PX %d", ttl, ok, err, driver.Milliseconds(ttl))
		}
	}
	if ok, err := n.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX(ttl=1m) after the refused calls = %v, %v; want true, nil", ok, err)
	}
}
