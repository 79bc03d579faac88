package memory_test

import (
	"context"
	"testing"
	"testing/synctest"
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

// A Node's subscriptions end with it, as a Redis driver's end when Close
// closes its pub/sub connection: a release through another Node of the
// store no longer notifies them.
func TestCloseEndsSubscriptions(t *testing.T) {
	ctx := context.Background()
	a, err := memory.Open(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	b, err := memory.Open(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	notify := make(chan struct{}, 1)
	cancel, err := a.Subscribe(ctx, "k", notify)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
	}
	if ok, err := b.ReleaseNotify(ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("ReleaseNotify = %v, %v; want true, nil", ok, err)
	}
	select {
	case <-notify:
		t.Fatal("a subscription of a closed Node was notified of a release through another Node: Close must end the Node's subscriptions")
	default:
	}
}

// A call on its way to the node (its latency not yet over) when the node
// stalls waits for it as the calls made after the stall do, as a command
// that reaches a server stopped with SIGSTOP waits in its socket: it is not
// applied while the node is stalled.
func TestStallHoldsCallsInTheirLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memory.New()
		n.SetLatency(100 * time.Millisecond)
		done := make(chan bool, 1)
		go func() {
			ok, err := n.SetNX(context.Background(), "k", "v", time.Hour)
			if err != nil {
				t.Errorf("SetNX: %v", err)
			}
			done <- ok
		}()
		time.Sleep(50 * time.Millisecond) // the call is in its latency
		n.SetStalled(true)
		time.Sleep(time.Second)
		synctest.Wait()
		if n.Holds("k") {
			t.Fatal("SetNX was applied while the node was stalled: a call in its latency when the node stalled must wait for the node to resume")
		}
		n.SetStalled(false)
		if ok := <-done; !ok {
			t.Fatal("SetNX after the node resumed = false, want true")
		}
	})
}
