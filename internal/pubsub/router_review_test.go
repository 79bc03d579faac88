package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/internal/pubsub"
)

// A slot migration (the shard unsubscribes the channel on its own) whose
// new shard cannot be reached at first: the subscription that failed to
// follow the slot is tried again, as after a failover
// (TestRouterRetriesFailedMove), not left without a subscription, its
// waiter polling without a word.
func TestRouterRetriesFailedFollow(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, s.dialers["A"], a, "ch", notify)

	// The slot of "ch" moves to B, whose primary cannot be reached at
	// first (a blip: it is back a moment later).
	s.move("ch", "B")
	s.dialers["B"].errs <- errRefused
	a.emit(t, pubsub.Unsubscribed, "ch")
	expectDial(t, s.dialers["B"]) // the follow, which fails
	s.dialers["B"].conns <- b     // then B can be reached
	resubscribedOn(t, b, "ch", notify, "no notification after the failed follow: the subscription was left without one")

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
}

// A failover in which the route cannot give the shard of some channels
// (their slots have no shard, say), while another channel of the lost
// shard has moved to the promoted replica: that channel is moved at the
// first recovery round, not held up behind the channels whose route fails
// (rehome stopped at the first route error, and Go's random map order
// decided whether it reached the channel that could move).
func TestRouterRouteErrorSparesOtherChannels(t *testing.T) {
	s := newShards()
	var (
		mu     sync.Mutex
		broken bool
	)
	errNoShard := errors.New("no shard serves the slot")
	route := func(ctx context.Context, channel string) (string, pubsub.Dialer, error) {
		mu.Lock()
		b := broken
		mu.Unlock()
		if b && strings.HasPrefix(channel, "x") {
			return "", nil, errNoShard
		}
		return s.route(ctx, channel)
	}
	ignore := goleak.IgnoreCurrent()
	r := pubsub.NewRouter(route, s.refresh)
	stop := make(chan struct{})
	var feeding sync.WaitGroup
	t.Cleanup(func() {
		r.Close()
		close(stop)
		feeding.Wait()
		goleak.VerifyNone(t, ignore)
	})
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a
	s.dialers["B"].conns <- b

	channels := []string{"y"}
	for i := range 15 {
		channels = append(channels, fmt.Sprintf("x%d", i))
	}
	notify := make(chan struct{}, 1)
	for _, ch := range channels {
		n := make(chan struct{}, 1)
		if ch == "y" {
			n = notify
		}
		subscribed(t, r, nil, a, ch, n)
	}

	mu.Lock()
	broken = true
	mu.Unlock()
	s.move("y", "B")    // the promotion, which a refresh learns
	feeding.Go(func() { // A refuses every dial from now on
		for {
			select {
			case s.dialers["A"].errs <- errRefused:
			case <-stop:
				return
			}
		}
	})
	a.Close() // the primary dies
	start := time.Now()
	select {
	case got := <-b.cmds:
		require.Equal(t, "SUBSCRIBE y", got)
	case <-time.After(3 * time.Second):
		t.Fatal("y, whose route works, was not moved to B within 3s of the failover")
	}
	t.Logf("y moved %v after the failover", time.Since(start).Round(time.Millisecond))
	b.emit(t, pubsub.Subscribed, "y")
	b.emit(t, pubsub.Message, "y")
	heard(t, notify, "no notification from B")
}
