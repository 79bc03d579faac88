package pubsub_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
	done := make(chan result, 1)
	subscribeAsync(t, r, "ch", notify, done)
	expectDial(t, s.dialers["A"])
	a.expect(t, "SUBSCRIBE ch")
	a.emit(t, pubsub.Subscribed, "ch")
	res := wait(t, done)
	require.NoError(t, res.err)

	// The slot of "ch" moves to B, whose primary cannot be reached at
	// first (a blip: it is back a moment later).
	s.move("ch", "B")
	s.dialers["B"].errs <- errRefused
	a.emit(t, pubsub.Unsubscribed, "ch")
	expectDial(t, s.dialers["B"]) // the follow, which fails
	s.dialers["B"].conns <- b     // then B can be reached
	b.expect(t, "SUBSCRIBE ch")
	b.emit(t, pubsub.Subscribed, "ch")
	b.emit(t, pubsub.Message, "ch")
	heard(t, notify, "no notification after the failed follow: the subscription was left without one")

	res.cancel()
	b.expect(t, "UNSUBSCRIBE ch")
}
