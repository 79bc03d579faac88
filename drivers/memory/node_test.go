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

// A Subscribe whose reply is lost (SetLoseReplies) fails and gives no
// cancel: it must leave no subscription behind, which nobody could cancel and
// which would go on sending to the caller's channel (and stay in the store)
// for good, as a Redis subscription does not outlive the connection that lost
// its reply.
func TestSubscribeReplyLostLeavesNoSubscription(t *testing.T) {
	ctx := context.Background()
	n := memory.New()
	notify := make(chan struct{}, 1)
	n.SetLoseReplies(true)
	if cancel, err := n.Subscribe(ctx, "k", notify); err == nil {
		cancel()
		t.Fatal("Subscribe with replies lost = nil error, want ErrReplyLost")
	}
	n.SetLoseReplies(false)
	if ok, err := n.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
	}
	if ok, err := n.ReleaseNotify(ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("ReleaseNotify = %v, %v; want true, nil", ok, err)
	}
	select {
	case <-notify:
		t.Fatal("a Subscribe that failed with its reply lost was notified of a later release: it left a subscription behind that nobody can cancel")
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

// A stalled store applies, when it resumes, the calls whose callers stopped
// waiting, as a server stopped with SIGSTOP reads, when it continues, the
// commands left in its sockets: a SetNX whose context ended sets the key
// (the late SET of the Redlock debate), and the calls are applied in the
// order they came, so that a release sent after it frees the key again. A
// subscription whose caller gave up is dropped.
func TestStalledAppliesAbandonedCallsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memory.New()
		n.SetStalled(true)
		short := func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}
		ctx, cancel := short()
		if _, err := n.SetNX(ctx, "late", "v1", time.Minute); err == nil {
			t.Fatal("SetNX on a stalled node returned nil at its context's end, want ctx.Err()")
		}
		cancel()
		ctx, cancel = short()
		if _, err := n.SetNX(ctx, "freed", "v2", time.Minute); err == nil {
			t.Fatal("SetNX on a stalled node returned nil at its context's end, want ctx.Err()")
		}
		cancel()
		ctx, cancel = short()
		if _, err := n.EvalRelease(ctx, "freed", "v2"); err == nil {
			t.Fatal("EvalRelease on a stalled node returned nil at its context's end, want ctx.Err()")
		}
		cancel()
		notify := make(chan struct{}, 1)
		ctx, cancel = short()
		if _, err := n.Subscribe(ctx, "late", notify); err == nil {
			t.Fatal("Subscribe on a stalled node returned nil at its context's end, want ctx.Err()")
		}
		cancel()
		if n.Holds("late") || n.Holds("freed") {
			t.Fatal("a call was applied while the node was stalled")
		}

		// A caller still waiting at the resume gets its call's reply, after
		// the calls that came before it.
		got := make(chan bool, 1)
		go func() {
			ok, err := n.SetNX(context.Background(), "late", "v3", time.Minute)
			if err != nil {
				t.Errorf("SetNX waiting through the stall: %v", err)
			}
			got <- ok
		}()
		synctest.Wait()
		n.SetStalled(false)
		if ok := <-got; ok {
			t.Error("SetNX(late, v3) made after SetNX(late, v1) = true: the abandoned SET must be applied first, as the server reads it first")
		}
		if ttl, ok := n.PTTL("late"); !ok || ttl <= 0 {
			t.Error("the SetNX abandoned during the stall was not applied when the node resumed")
		}
		if ok, err := n.EvalRelease(context.Background(), "late", "v1"); !ok || err != nil {
			t.Errorf("EvalRelease(late, v1) = %v, %v; want true: the key must hold the abandoned SET's value", ok, err)
		}
		if n.Holds("freed") {
			t.Error("the release abandoned after the SET on the same key was not applied after it")
		}
		if ok, err := n.SetNX(context.Background(), "late", "v4", time.Minute); !ok || err != nil {
			t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
		}
		if ok, err := n.ReleaseNotify(context.Background(), "late", "v4"); !ok || err != nil {
			t.Fatalf("ReleaseNotify = %v, %v; want true, nil", ok, err)
		}
		select {
		case <-notify:
			t.Error("a Subscribe whose caller gave up during the stall was applied at the resume: it must be dropped")
		default:
		}
	})
}

// New has no error to return, so a nil Option, or WithClock(nil), must not
// leave a node that panics at its first call (on a Client's goroutine,
// where nothing recovers it): a nil Option is skipped and WithClock(nil)
// keeps the default RealClock.
func TestNewNilOptionsDoNotPanic(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]memory.Option{
		"nil Option":     {nil},
		"WithClock(nil)": {memory.WithClock(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("memory.New(%s), then SetNX and String: panic %v; want a working node", name, v)
				}
			}()
			n := memory.New(opts...)
			n.SetLatency(time.Millisecond) // the clock's Sleep
			if ok, err := n.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
				t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
			}
			if n.String() == "" {
				t.Errorf("String() = \"\"; want the default name")
			}
		})
	}
}
