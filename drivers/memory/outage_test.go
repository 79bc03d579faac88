package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// A subscription survives an outage of its node, as the Redis drivers'
// does (their pub/sub subscribes again on a new connection), and gets one
// notice once the node is back, as theirs does once subscribed again: a
// release may have been published while it could not hear. It got none,
// so a waiter whose release it missed waited for its backoff. Nothing is
// sent while the node is down, nor to a subscription through another Conn
// when one Conn's connection is back.
func TestSubscriptionNoticedAfterOutage(t *testing.T) {
	ctx := context.Background()
	n := memory.New()
	other := n.Conn()
	notify, otherNotify := make(chan struct{}, 1), make(chan struct{}, 1)
	for _, s := range []struct {
		n      *memory.Node
		notify chan struct{}
	}{{n, notify}, {other, otherNotify}} {
		cancel, err := s.n.Subscribe(ctx, "k", s.notify)
		if err != nil {
			t.Fatal(err)
		}
		defer cancel()
	}
	notices := func(c chan struct{}) int {
		select {
		case <-c:
			return 1
		default:
			return 0
		}
	}
	for _, o := range []struct {
		name       string
		down, up   func()
		want, peer int // notices on n's subscription and on other's
	}{
		{"SetDown", func() { n.SetDown(true) }, func() { n.SetDown(false) }, 1, 1},
		{"Forget", func() {}, n.Forget, 1, 1},
		{"Forget while down", func() { n.SetDown(true); n.Forget() }, func() { n.SetDown(false) }, 1, 1},
		{"SetConnDown", func() { n.SetConnDown(true) }, func() { n.SetConnDown(false) }, 1, 0},
	} {
		o.down()
		if got := notices(notify) + notices(otherNotify); got != 0 {
			t.Errorf("%s: %d notices while the node is out, want 0", o.name, got)
		}
		o.up()
		if got, peer := notices(notify), notices(otherNotify); got != o.want || peer != o.peer {
			t.Errorf("%s: %d notices once the node is back (%d through the other Conn), want %d (%d)", o.name, got, peer, o.want, o.peer)
		}
	}
	// Still subscribed: a release is heard.
	if ok, err := other.SetNX(ctx, "k", "v", time.Minute); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v", ok, err)
	}
	if ok, err := other.ReleaseNotify(ctx, "k", "v"); !ok || err != nil {
		t.Fatalf("ReleaseNotify = %v, %v", ok, err)
	}
	if notices(notify) != 1 {
		t.Error("a release after the outages was not heard")
	}
}
