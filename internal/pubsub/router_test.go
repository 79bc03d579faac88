package pubsub_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
)

// shards plays a cluster of two shards, "A" and "B", for a Router: a dialer
// per shard, and which shard serves a channel.
type shards struct {
	mu       sync.Mutex
	serves   map[string]string // channel -> shard; "A" by default
	dialers  map[string]*dialer
	refreshs int
}

func newShards() *shards {
	return &shards{serves: make(map[string]string), dialers: map[string]*dialer{"A": newDialer(), "B": newDialer()}}
}

func (s *shards) route(_ context.Context, channel string) (string, pubsub.Dialer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shard := s.serves[channel]
	if shard == "" {
		shard = "A"
	}
	return shard, s.dialers[shard].dial, nil
}

func (s *shards) refresh(context.Context) {
	s.mu.Lock()
	s.refreshs++
	s.mu.Unlock()
}

func (s *shards) move(channel, to string) {
	s.mu.Lock()
	s.serves[channel] = to
	s.mu.Unlock()
}

func newRouter(t *testing.T, s *shards) *pubsub.Router {
	ignore := goleak.IgnoreCurrent()
	r := pubsub.NewRouter(s.route, s.refresh)
	t.Cleanup(func() {
		r.Close()
		goleak.VerifyNone(t, ignore)
	})
	return r
}

// subscribeAsync subscribes notify to channel through r on a goroutine of its
// own, which sends the outcome on done.
func subscribeAsync(t *testing.T, r *pubsub.Router, channel string, notify chan<- struct{}, done chan<- result) {
	go func() {
		cancel, err := r.Subscribe(t.Context(), channel, notify)
		done <- result{cancel, err}
	}()
}

// subscribed subscribes channel through r with notify and confirms it on
// conn, the connection of the shard that serves it, dialed through d first
// unless d is nil; it fails the test unless the subscription is made, and
// returns it.
func subscribed(t *testing.T, r *pubsub.Router, d *dialer, conn *fakeConn, channel string, notify chan<- struct{}) result {
	t.Helper()
	done := make(chan result, 1)
	subscribeAsync(t, r, channel, notify, done)
	if d != nil {
		expectDial(t, d)
	}
	conn.expect(t, "SUBSCRIBE "+channel)
	conn.emit(t, pubsub.Subscribed, channel)
	res := wait(t, done)
	require.NoError(t, res.err)
	return res
}

// resubscribedOn fails the test with what unless channel is subscribed
// again on conn and, once conn confirms it, notify hears of it (a release
// may have been published meanwhile), and then of a message on it.
func resubscribedOn(t *testing.T, conn *fakeConn, channel string, notify <-chan struct{}, what string) {
	t.Helper()
	conn.expect(t, "SUBSCRIBE "+channel)
	conn.emit(t, pubsub.Subscribed, channel)
	heard(t, notify, what+" (when subscribed again, as a release may have been missed)")
	conn.emit(t, pubsub.Message, channel)
	heard(t, notify, what)
}

// A subscription follows its channel to the shard its slot moved to, and
// its cancel still ends it there.
func TestRouterFollowsMovedChannel(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a
	s.dialers["B"].conns <- b

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, nil, a, "ch", notify)

	// Another channel on A, which stays.
	other := make(chan struct{}, 1)
	subscribed(t, r, nil, a, "stays", other)

	// The slot of "ch" moves to B: A unsubscribes it on its own.
	s.move("ch", "B")
	a.emit(t, pubsub.Unsubscribed, "ch")
	require.Empty(t, notify, "notified at the first subscription")
	resubscribedOn(t, b, "ch", notify, "no notification from the shard the channel moved to")
	a.emit(t, pubsub.Message, "stays")
	select {
	case <-other:
	case <-time.After(5 * time.Second):
		t.Fatal("the channel that stayed on A no longer hears")
	}
	s.mu.Lock()
	require.Positive(t, s.refreshs, "the route was refreshed before following")
	s.mu.Unlock()

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
	a.quiet(t)
}

func TestRouterClosed(t *testing.T) {
	s := newShards()
	r := pubsub.NewRouter(s.route, nil)
	r.Close()
	_, err := r.Subscribe(t.Context(), "ch", make(chan struct{}, 1))
	require.ErrorIs(t, err, driver.ErrClosed)
}

// A shard that answers MOVED to a channel's SSUBSCRIBE (the route knew the
// slot map from before the slot moved) makes Subscribe refresh the route and
// subscribe where the slot went; the shard's other channels still hear.
func TestRouterSubscribeMeetsMoved(t *testing.T) {
	for _, how := range []string{"Receive", "Subscribe"} {
		t.Run(how, func(t *testing.T) {
			s := newShards()
			r := newRouter(t, s)
			a, b := newFakeConn(), newFakeConn()
			s.dialers["A"].conns <- a
			s.dialers["B"].conns <- b

			stays := make(chan struct{}, 1)
			done := make(chan result, 2)
			subscribed(t, r, nil, a, "stays", stays)

			// The slot of "ch" went to B, which the route learns only
			// when refreshed.
			s.mu.Lock()
			before := s.refreshs
			s.mu.Unlock()
			if how == "Subscribe" {
				a.refuseNext("SUBSCRIBE ch", movedReply("ch"))
			}
			notify := make(chan struct{}, 1)
			subscribeAsync(t, r, "ch", notify, done)
			a.expect(t, "SUBSCRIBE ch")
			s.move("ch", "B") // what a refresh would learn
			if how == "Receive" {
				a.reply(t, movedReply("ch"))
			}
			b.expect(t, "SUBSCRIBE ch")
			b.emit(t, pubsub.Subscribed, "ch")
			res := wait(t, done)
			require.NoError(t, res.err)
			s.mu.Lock()
			require.Greater(t, s.refreshs, before, "the route was refreshed after MOVED")
			s.mu.Unlock()

			b.emit(t, pubsub.Message, "ch")
			select {
			case <-notify:
			case <-time.After(5 * time.Second):
				t.Fatal("no notification from the shard the channel moved to")
			}
			require.False(t, a.isClosed(), "the shard that answered MOVED lost its connection")
			a.emit(t, pubsub.Message, "stays")
			select {
			case <-stays:
			case <-time.After(5 * time.Second):
				t.Fatal("the channel that stayed on A no longer hears")
			}
			res.cancel()
			b.expect(t, "UNSUBSCRIBE ch")
			a.quiet(t)
		})
	}
}

// A channel whose slot leaves the shard right after the shard confirmed its
// SSUBSCRIBE, before Subscribe returned, still follows the slot: the
// follower is known to the router before it is subscribed.
func TestRouterMovedWhileSubscribing(t *testing.T) {
	for i := range 20 {
		s := newShards()
		r := pubsub.NewRouter(s.route, s.refresh)
		a, b := newFakeConn(), newFakeConn()
		s.dialers["A"].conns <- a
		s.dialers["B"].conns <- b

		notify := make(chan struct{}, 1)
		done := make(chan result, 1)
		subscribeAsync(t, r, "ch", notify, done)
		a.expect(t, "SUBSCRIBE ch")
		s.move("ch", "B")
		// Confirmed, then dropped at once: the slot moved.
		a.emit(t, pubsub.Subscribed, "ch")
		a.emit(t, pubsub.Unsubscribed, "ch")
		select {
		case got := <-b.cmds:
			require.Equal(t, "SUBSCRIBE ch", got, "iteration %d", i)
		case <-time.After(5 * time.Second):
			t.Fatalf("iteration %d: the subscription did not follow its slot to B", i)
		}
		b.emit(t, pubsub.Subscribed, "ch")
		// Subscribe returns before B confirms if A's drop came after it
		// returned, after B's confirmation if before.
		res := wait(t, done)
		require.NoError(t, res.err)
		b.emit(t, pubsub.Message, "ch")
		select {
		case <-notify:
		case <-time.After(5 * time.Second):
			t.Fatalf("iteration %d: no notification from B", i)
		}
		res.cancel()
		r.Close()
	}
}
