package pubsub_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/pubsub"
)

var errRefused = errors.New("connection refused")

// expectDial fails the test unless d is dialed within a few seconds.
func expectDial(t *testing.T, d *dialer) {
	t.Helper()
	select {
	case <-d.dials:
	case <-time.After(5 * time.Second):
		t.Fatal("no dial")
	}
}

// heard fails the test unless notify hears a message within a few seconds.
func heard(t *testing.T, notify <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
}

// A failover: the shard's primary dies (its connection breaks, and it can
// no longer be dialed), then a replica of it, another shard for the route,
// is promoted. Neither MOVED nor SUNSUBSCRIBE comes: the router learns the
// slot map again and subscribes the channel at the promoted replica.
func TestRouterFollowsFailover(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a
	s.dialers["B"].conns <- b

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, s.dialers["A"], a, "ch", notify)

	// The primary dies; until the replica is promoted the route still
	// gives A, which refuses connections.
	s.dialers["A"].errs <- errRefused
	a.Close()
	expectDial(t, s.dialers["A"]) // the router reconnects A, which refuses
	s.mu.Lock()
	before := s.refreshs
	s.mu.Unlock()
	s.move("ch", "B") // the promotion, which a refresh learns
	s.dialers["A"].errs <- errRefused
	resubscribedOn(t, b, "ch", notify, "no notification from the promoted replica")
	s.mu.Lock()
	require.Greater(t, s.refreshs, before, "the route was refreshed before the subscription moved")
	s.mu.Unlock()

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
}

// A shard whose connection broke but that still serves the channel (a
// restart, a network blip) is reconnected by the router, which subscribes
// its channels again: no new Subscribe is needed for them to hear.
func TestRouterReconnectsLostShard(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a1, a2 := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a1

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, nil, a1, "ch", notify)

	s.dialers["A"].errs <- errRefused // the first reconnection fails
	s.dialers["A"].conns <- a2        // the next succeeds
	a1.Close()
	resubscribedOn(t, a2, "ch", notify, "no notification after the shard was reconnected")

	res.cancel()
	a2.expect(t, "UNSUBSCRIBE ch")
}

// A subscription canceled while its shard is lost leaves nothing to
// recover: the router stops, and Close finds no goroutine left behind
// (newRouter's cleanup checks).
func TestRouterLostShardWithoutSubscribers(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a := newFakeConn()
	s.dialers["A"].conns <- a
	res := subscribed(t, r, s.dialers["A"], a, "ch", make(chan struct{}, 1))
	a.Close()
	res.cancel()
	select {
	case <-s.dialers["A"].dials:
		t.Fatal("the router reconnected a shard without subscribers")
	case <-time.After(300 * time.Millisecond):
	}
}

// A failover whose promoted replica cannot be reached at first: the
// subscription that failed to move is tried again at the next recovery
// round, not left without a subscription.
func TestRouterRetriesFailedMove(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, s.dialers["A"], a, "ch", notify)

	s.move("ch", "B")                 // the promotion, which a refresh learns
	s.dialers["B"].errs <- errRefused // the promoted replica is not reachable at first
	s.dialers["A"].errs <- errRefused
	a.Close()                     // the primary dies
	expectDial(t, s.dialers["B"]) // the move, which fails
	s.dialers["B"].conns <- b     // then it can be reached
	resubscribedOn(t, b, "ch", notify, "no notification after the failed move was tried again")

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
}

// A failover of a primary that hangs: its connection was found lost (the
// driver's Conn failed it: nothing answered its PING), and dialing it again
// hangs (the server takes the connection and never answers the handshake,
// which a client without read timeouts waits for as long as its context
// lasts). The router's reconnection of the shard must not wait for that
// dial for ever: once the route gives the promoted replica, the
// subscription moves there.
func TestRouterFollowsFailoverWhileDialHangs(t *testing.T) {
	s := newShards()
	r := newRouter(t, s)
	a, b := newFakeConn(), newFakeConn()
	s.dialers["A"].conns <- a
	s.dialers["B"].conns <- b

	notify := make(chan struct{}, 1)
	res := subscribed(t, r, s.dialers["A"], a, "ch", notify)

	a.Close()                     // lost: the primary hangs
	expectDial(t, s.dialers["A"]) // the router reconnects A: the dial hangs (nothing to take)
	s.move("ch", "B")             // the promotion, which a refresh learns
	select {
	case got := <-b.cmds:
		require.Equal(t, "SUBSCRIBE ch", got)
	case <-time.After(15 * time.Second):
		t.Fatal("the subscription did not move to the promoted replica while the dial of the hung primary hung")
	}
	b.emit(t, pubsub.Subscribed, "ch")
	heard(t, notify, "no notification once subscribed on the promoted replica")

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
}
