package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
)

// The hub's logic against a scripted connection; the drivers run
// pubsubtest against real servers.

var errBroken = errors.New("connection broken")

// fakeConn is a connection whose server the test plays: it reads the
// commands the hub sends and answers with events.
type fakeConn struct {
	cmds    chan string // "SUBSCRIBE a b", "UNSUBSCRIBE a"
	events  chan pubsub.Event
	replies chan error // error replies that Receive returns (as go-redis does)
	closed  chan struct{}
	once    sync.Once

	mu     sync.Mutex
	refuse map[string]error // error replies that commands return (as rueidis does), by command

	refuseAlways error // if not nil, every command returns it
}

func newFakeConn() *fakeConn {
	return &fakeConn{cmds: make(chan string, 16), events: make(chan pubsub.Event), replies: make(chan error),
		refuse: make(map[string]error), closed: make(chan struct{})}
}

func (c *fakeConn) send(cmd string, channels []string) error {
	cmd += " " + strings.Join(channels, " ")
	select {
	case c.cmds <- cmd:
	case <-c.closed:
		return errBroken
	}
	if c.refuseAlways != nil {
		return c.refuseAlways
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.refuse[cmd]
	delete(c.refuse, cmd)
	return err
}

// refuseNext makes the next cmd ("SUBSCRIBE a") return err, an error reply.
func (c *fakeConn) refuseNext(cmd string, err error) {
	c.mu.Lock()
	c.refuse[cmd] = err
	c.mu.Unlock()
}

func (c *fakeConn) Subscribe(_ context.Context, channels ...string) error {
	return c.send("SUBSCRIBE", channels)
}

func (c *fakeConn) Unsubscribe(_ context.Context, channels ...string) error {
	return c.send("UNSUBSCRIBE", channels)
}

func (c *fakeConn) Receive(context.Context) (pubsub.Event, error) {
	select {
	case ev := <-c.events:
		return ev, nil
	case err := <-c.replies:
		return pubsub.Event{}, err
	case <-c.closed:
		return pubsub.Event{}, errBroken
	}
}

func (c *fakeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// expect fails the test unless the hub sends cmd next.
func (c *fakeConn) expect(t *testing.T, cmd string) {
	t.Helper()
	select {
	case got := <-c.cmds:
		require.Equal(t, cmd, got)
	case <-time.After(5 * time.Second):
		t.Fatalf("the hub did not send %q", cmd)
	}
}

// quiet fails the test if the hub sends a command within a short while.
func (c *fakeConn) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-c.cmds:
		t.Fatalf("the hub sent %q, want nothing", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func (c *fakeConn) emit(t *testing.T, kind pubsub.Kind, channel string) {
	t.Helper()
	select {
	case c.events <- pubsub.Event{Kind: kind, Channel: channel}:
	case <-time.After(5 * time.Second):
		t.Fatal("the hub does not read its connection")
	}
}

// reply makes Receive return err, an error reply.
func (c *fakeConn) reply(t *testing.T, err error) {
	t.Helper()
	select {
	case c.replies <- err:
	case <-time.After(5 * time.Second):
		t.Fatal("the hub does not read its connection")
	}
}

// isClosed reports whether the hub closed c.
func (c *fakeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// dialer returns a Dialer that hands out the connections the test puts in
// conns, or fails with the errors it puts in errs.
type dialer struct {
	conns chan *fakeConn
	errs  chan error
	dials chan struct{} // receives at each dial
}

func newDialer() *dialer {
	return &dialer{conns: make(chan *fakeConn, 4), errs: make(chan error, 4), dials: make(chan struct{}, 16)}
}

func (d *dialer) dial(ctx context.Context) (pubsub.Conn, error) {
	d.dials <- struct{}{}
	select {
	case c := <-d.conns:
		return c, nil
	case err := <-d.errs:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newHub returns a hub over d, closed when the test ends, and checks that
// no goroutine outlives it. The hub makes no connection of its own after one
// broke, so that the test's Subscribe calls alone dial (see TestRelink).
func newHub(t *testing.T, d *dialer) *pubsub.Hub {
	return newRelinkingHub(t, d, time.Hour)
}

// newRelinkingHub is newHub for a hub that makes a new connection itself
// relinkFirst after one broke.
func newRelinkingHub(t *testing.T, d *dialer, relinkFirst time.Duration) *pubsub.Hub {
	return newRelinkingHubWith(t, d.dial, relinkFirst)
}

// newRelinkingHubWith is newRelinkingHub over dial.
func newRelinkingHubWith(t *testing.T, dial pubsub.Dialer, relinkFirst time.Duration) *pubsub.Hub {
	ignore := goleak.IgnoreCurrent()
	h := pubsub.New(dial)
	pubsub.SetRelinkFirst(h, relinkFirst)
	t.Cleanup(func() {
		h.Close()
		goleak.VerifyNone(t, ignore)
	})
	return h
}

type result struct {
	cancel func()
	err    error
}

// subscribe starts a Subscribe call and returns its result's channel.
func subscribe(ctx context.Context, h *pubsub.Hub, channel string, notify chan<- struct{}) <-chan result {
	done := make(chan result, 1)
	go func() {
		cancel, err := h.Subscribe(ctx, channel, notify)
		done <- result{cancel, err}
	}()
	return done
}

func wait(t *testing.T, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe did not return")
		return result{}
	}
}

func pending(t *testing.T, done <-chan result) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("Subscribe returned (%v) before the server confirmed", r.err)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestSubscribeWaitsForConfirmation(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	conn := newFakeConn()
	d.conns <- conn
	notify := make(chan struct{}, 1)
	first := subscribe(t.Context(), h, "a", notify)
	conn.expect(t, "SUBSCRIBE a")
	second := subscribe(t.Context(), h, "a", notify)
	pending(t, first)
	pending(t, second)
	conn.quiet(t) // one SUBSCRIBE for both
	conn.emit(t, pubsub.Subscribed, "a")
	r1, r2 := wait(t, first), wait(t, second)
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)

	// Once subscribed, a third returns at once.
	r3, err := h.Subscribe(t.Context(), "a", notify)
	require.NoError(t, err)
	conn.quiet(t)

	r1.cancel()
	r2.cancel()
	conn.quiet(t) // r3 is still subscribed
	r3()
	conn.expect(t, "UNSUBSCRIBE a")
	require.Len(t, d.dials, 1, "one connection")
}

// A subscriber that arrives while the channel's UNSUBSCRIBE is unconfirmed
// waits for it, then for a new SUBSCRIBE: each confirmation answers the one
// command in flight.
func TestSubscribeWhileUnsubscribing(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	conn := newFakeConn()
	d.conns <- conn
	notify := make(chan struct{}, 1)
	done := subscribe(t.Context(), h, "a", notify)
	conn.expect(t, "SUBSCRIBE a")
	conn.emit(t, pubsub.Subscribed, "a")
	wait(t, done).cancel()
	conn.expect(t, "UNSUBSCRIBE a")

	again := subscribe(t.Context(), h, "a", notify)
	pending(t, again)
	conn.quiet(t)
	conn.emit(t, pubsub.Unsubscribed, "a")
	conn.expect(t, "SUBSCRIBE a")
	pending(t, again)
	conn.emit(t, pubsub.Subscribed, "a")
	r := wait(t, again)
	require.NoError(t, r.err)
	conn.emit(t, pubsub.Message, "a")
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	r.cancel()
}

// The last subscriber leaving before the confirmation: the channel is
// unsubscribed once the SUBSCRIBE is confirmed.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can pass the 100 ms deadline before the hub sends its SUBSCRIBE.
func TestSubscribeContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDialer()
		h := newHub(t, d)
		conn := newFakeConn()
		d.conns <- conn
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		done := subscribe(ctx, h, "a", make(chan struct{}, 1))
		conn.expect(t, "SUBSCRIBE a")
		require.ErrorIs(t, wait(t, done).err, context.DeadlineExceeded)
		conn.quiet(t)
		conn.emit(t, pubsub.Subscribed, "a")
		conn.expect(t, "UNSUBSCRIBE a")
	})
}

func TestMessagesStopAtCancel(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	conn := newFakeConn()
	d.conns <- conn
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	doneA, doneB := subscribe(t.Context(), h, "k", a), subscribe(t.Context(), h, "k", b)
	conn.expect(t, "SUBSCRIBE k")
	conn.emit(t, pubsub.Subscribed, "k")
	ra, rb := wait(t, doneA), wait(t, doneB)
	conn.emit(t, pubsub.Message, "k")
	conn.emit(t, pubsub.Message, "k") // a full notify channel does not block the hub
	conn.emit(t, pubsub.Message, "other")
	require.Len(t, a, 1)
	require.Len(t, b, 1)
	<-a
	<-b
	ra.cancel()
	ra.cancel() // idempotent
	conn.emit(t, pubsub.Message, "k")
	conn.emit(t, pubsub.Ignored, "") // the message was handled
	require.Empty(t, a, "notified after cancel returned")
	require.Len(t, b, 1)
	rb.cancel()
}

// A broken connection fails the waiting Subscribe calls; the next Subscribe
// dials again and subscribes the surviving subscriptions too.
func TestConnectionBreaks(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	conn := newFakeConn()
	d.conns <- conn
	kept := make(chan struct{}, 1)
	done := subscribe(t.Context(), h, "kept", kept)
	conn.expect(t, "SUBSCRIBE kept")
	conn.emit(t, pubsub.Subscribed, "kept")
	keptSub := wait(t, done)

	waiting := subscribe(t.Context(), h, "waiting", make(chan struct{}, 1))
	conn.expect(t, "SUBSCRIBE waiting")
	conn.Close()
	err := wait(t, waiting).err
	require.ErrorIs(t, err, errBroken)
	require.Contains(t, err.Error(), "pub/sub connection")

	// A failed dial fails the Subscribe; the next one dials again.
	d.errs <- errors.New("refused")
	_, err = h.Subscribe(t.Context(), "new", make(chan struct{}, 1))
	require.ErrorContains(t, err, "refused")

	conn2 := newFakeConn()
	d.conns <- conn2
	fresh := make(chan struct{}, 1)
	done = subscribe(t.Context(), h, "new", fresh)
	got := []string{<-conn2.cmds}
	if got[0] != "SUBSCRIBE kept new" && got[0] != "SUBSCRIBE new kept" {
		t.Fatalf("the new connection sent %q, want a SUBSCRIBE of kept and new", got[0])
	}
	conn2.emit(t, pubsub.Subscribed, "kept")
	conn2.emit(t, pubsub.Subscribed, "new")
	r := wait(t, done)
	require.NoError(t, r.err)
	conn2.emit(t, pubsub.Message, "kept")
	conn2.emit(t, pubsub.Message, "new")
	conn2.emit(t, pubsub.Ignored, "")
	require.Len(t, kept, 1)
	require.Len(t, fresh, 1)
	require.Len(t, d.dials, 3)
	keptSub.cancel()
	r.cancel()
}

// subscribedOn subscribes to channel on h, whose dialer d is then given a
// new connection, confirms the SUBSCRIBE as the server would, and returns
// the connection and the subscription's cancel.
func subscribedOn(t *testing.T, h *pubsub.Hub, d *dialer, channel string, notify chan<- struct{}) (*fakeConn, func()) {
	t.Helper()
	conn := newFakeConn()
	d.conns <- conn
	done := subscribe(t.Context(), h, channel, notify)
	conn.expect(t, "SUBSCRIBE "+channel)
	conn.emit(t, pubsub.Subscribed, channel)
	r := wait(t, done)
	require.NoError(t, r.err)
	redialed(t, d)
	return conn, r.cancel
}

// redialed fails the test unless d is asked for a connection within 5s.
func redialed(t *testing.T, d *dialer) {
	t.Helper()
	select {
	case <-d.dials:
	case <-time.After(5 * time.Second):
		t.Fatal("the hub did not dial")
	}
}

// A hub whose connection broke makes a new one itself, with no Subscribe to
// prompt it, and subscribes its channels again there: it dials again while
// dials fail, and stops once a connection is up.
func TestRelink(t *testing.T) {
	d := newDialer()
	h := newRelinkingHub(t, d, time.Millisecond)
	kept := make(chan struct{}, 1)
	conn, cancel := subscribedOn(t, h, d, "kept", kept)
	defer cancel()

	conn.Close()
	for range 2 {
		redialed(t, d)
		d.errs <- errors.New("refused")
	}
	redialed(t, d)
	conn2 := newFakeConn()
	d.conns <- conn2
	conn2.expect(t, "SUBSCRIBE kept")
	conn2.emit(t, pubsub.Subscribed, "kept")
	conn2.emit(t, pubsub.Message, "kept")
	select {
	case <-kept:
	case <-time.After(5 * time.Second):
		t.Fatal("a subscription made before the connection broke hears nothing on the hub's new connection")
	}
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, d.dials, "dials once a connection is up")
}

// A subscriber of a channel subscribed again on a new connection is notified
// once the server confirms it there, with no message: a release may have
// been published while there was no connection, and its waiter would
// otherwise sleep through it until its next poll. A subscriber that joins
// while the channel is being subscribed again, or on a first subscription,
// is not: its Subscribe returns then, and its waiter tries at once anyway.
func TestResubscribedNotifies(t *testing.T) {
	d := newDialer()
	h := newRelinkingHub(t, d, time.Millisecond)
	kept := make(chan struct{}, 1)
	conn, cancel := subscribedOn(t, h, d, "kept", kept)
	defer cancel()
	require.Empty(t, kept, "a first subscription notifies")

	conn2 := reconnected(t, conn, d, "kept")
	joined := make(chan struct{}, 1)
	done := subscribe(t.Context(), h, "kept", joined)
	time.Sleep(20 * time.Millisecond) // the second subscriber waits for the confirmation
	require.Empty(t, kept, "notified before the channel is subscribed again")
	conn2.emit(t, pubsub.Subscribed, "kept")
	r := wait(t, done)
	require.NoError(t, r.err)
	defer r.cancel()
	heard(t, kept, "a subscriber of a channel subscribed again on a new connection was not notified")
	require.Empty(t, joined, "a subscriber that joined during the new subscription was notified")
}

// reconnected breaks conn, the hub's connection, waits for the hub to dial
// again through d, gives it a new connection, and returns that connection
// once the hub has sent it the SUBSCRIBE of channel.
func reconnected(t *testing.T, conn *fakeConn, d *dialer, channel string) *fakeConn {
	t.Helper()
	conn.Close()
	redialed(t, d)
	conn2 := newFakeConn()
	d.conns <- conn2
	conn2.expect(t, "SUBSCRIBE "+channel)
	return conn2
}

// A hub without subscribers makes no connection after one broke; Close ends
// the hub's relinking while it waits to dial again and while it dials.
func TestRelinkEnds(t *testing.T) {
	d := newDialer()
	h := newRelinkingHub(t, d, time.Millisecond)
	conn, cancel := subscribedOn(t, h, d, "a", make(chan struct{}, 1))
	cancel()
	conn.expect(t, "UNSUBSCRIBE a")
	conn.emit(t, pubsub.Unsubscribed, "a")
	conn.Close()
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, d.dials, "a hub without subscribers dialed again")

	for _, tc := range []struct {
		name        string
		relinkFirst time.Duration
	}{{"waiting", time.Hour}, {"dialing", time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDialer()
			h := newRelinkingHub(t, d, tc.relinkFirst)
			conn, cancel := subscribedOn(t, h, d, "a", make(chan struct{}, 1))
			defer cancel()
			conn.Close()
			if tc.relinkFirst < time.Second {
				redialed(t, d) // the dial waits for a connection that never comes
			}
			closed := make(chan struct{})
			go func() { h.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Close waits for the hub's relinking")
			}
		})
	}
}

// A hub whose new connections are dialed but then fail at once (here the
// server refuses the SSUBSCRIBE that subscribes its channels again, as Redis
// does with NOPERM once an ACL no longer allows the channel) must back off as
// it does while dials fail: relink's doubling intervals restart at
// relinkFirst after every successful dial, so such a hub dials a new
// connection every relinkFirst (50ms: 20 connections a second per node) for
// as long as it has subscribers.
func TestRelinkBacksOffWhenConnectionsFailAtOnce(t *testing.T) {
	d := newDialer()
	var dials atomic.Int32
	var broken atomic.Bool
	dial := func(ctx context.Context) (pubsub.Conn, error) {
		dials.Add(1)
		if broken.Load() {
			c := newFakeConn()
			c.refuseAlways = errors.New("NOPERM this user has no permissions to access one of the channels used as arguments")
			go func() { // the hub's SUBSCRIBE is read, and refused
				for {
					select {
					case <-c.cmds:
					case <-c.closed:
						return
					}
				}
			}()
			return c, nil
		}
		return d.dial(ctx)
	}
	h := newRelinkingHubWith(t, dial, 10*time.Millisecond)
	conn, cancel := subscribedOn(t, h, d, "kept", make(chan struct{}, 1))
	defer cancel()

	broken.Store(true)
	before := dials.Load()
	conn.Close()
	time.Sleep(1500 * time.Millisecond)
	n := dials.Load() - before
	// Doubling from 10ms up to 1s: about 8 dials in 1.5s.
	require.LessOrEqual(t, n, int32(20), "the hub dialed %d connections in 1.5s: it does not back off when each new connection fails at once", n)
}

func TestClose(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	// Close while dialing ends the dial and the waiting Subscribe.
	waiting := subscribe(t.Context(), h, "a", make(chan struct{}, 1))
	<-d.dials
	h.Close()
	require.ErrorIs(t, wait(t, waiting).err, driver.ErrClosed)
	_, err := h.Subscribe(t.Context(), "a", make(chan struct{}, 1))
	require.ErrorIs(t, err, driver.ErrClosed)
	h.Close() // idempotent

	// Close with a connection closes it, and a cancel after Close is harmless.
	d = newDialer()
	h = newHub(t, d)
	conn := newFakeConn()
	d.conns <- conn
	done := subscribe(t.Context(), h, "a", make(chan struct{}, 1))
	conn.expect(t, "SUBSCRIBE a")
	conn.emit(t, pubsub.Subscribed, "a")
	r := wait(t, done)
	h.Close()
	select {
	case <-conn.closed:
	default:
		t.Fatal("Close did not close the connection")
	}
	r.cancel()
}

func TestSubscribeDoneContext(t *testing.T) {
	d := newDialer()
	h := newHub(t, d)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := h.Subscribe(ctx, "a", make(chan struct{}, 1))
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, d.dials, "a done context must not dial")
}

// movedReply is a shard's MOVED reply to a SSUBSCRIBE of channel.
func movedReply(channel string) error {
	return fmt.Errorf("MOVED %d 127.0.0.1:1", driver.HashSlot(channel))
}

// A MOVED reply to a SSUBSCRIBE fails the Subscribe calls waiting for that
// channel only, with an error IsMoved recognizes: the connection and the
// other channels stay, and the channel can be subscribed again.
func TestMovedReplyFailsItsChannelOnly(t *testing.T) {
	for _, how := range []string{"Receive", "Subscribe"} {
		t.Run(how, func(t *testing.T) {
			d := newDialer()
			h := newHub(t, d)
			conn := newFakeConn()
			d.conns <- conn
			stays := make(chan struct{}, 1)
			r := subscribe(t.Context(), h, "stays", stays)
			conn.expect(t, "SUBSCRIBE stays")
			conn.emit(t, pubsub.Subscribed, "stays")
			require.NoError(t, wait(t, r).err)

			if how == "Subscribe" {
				conn.refuseNext("SUBSCRIBE gone", movedReply("gone"))
			}
			gone := subscribe(t.Context(), h, "gone", make(chan struct{}, 1))
			conn.expect(t, "SUBSCRIBE gone")
			if how == "Receive" {
				conn.reply(t, movedReply("gone"))
			}
			res := wait(t, gone)
			require.Error(t, res.err)
			require.True(t, pubsub.IsMoved(res.err), "IsMoved(%v)", res.err)
			require.False(t, conn.isClosed(), "the connection was closed for a MOVED reply")

			conn.emit(t, pubsub.Message, "stays")
			select {
			case <-stays:
			case <-time.After(5 * time.Second):
				t.Fatal("the other channel no longer hears")
			}
			again := subscribe(t.Context(), h, "gone", make(chan struct{}, 1))
			conn.expect(t, "SUBSCRIBE gone")
			conn.emit(t, pubsub.Subscribed, "gone")
			require.NoError(t, wait(t, again).err)
			require.Len(t, d.dials, 1, "one connection")
		})
	}
}

// A subscriber that joined a channel already subscribed is notified too
// when the channel is subscribed again on a new connection, as one that
// joined before the confirmation is.
func TestResubscribedNotifiesLaterJoiner(t *testing.T) {
	d := newDialer()
	h := newRelinkingHub(t, d, time.Millisecond)
	conn, cancel := subscribedOn(t, h, d, "kept", make(chan struct{}, 1))
	defer cancel()
	joined := make(chan struct{}, 1)
	r := wait(t, subscribe(t.Context(), h, "kept", joined))
	require.NoError(t, r.err)
	defer r.cancel()
	require.Empty(t, joined, "a subscriber that joined a subscribed channel was notified")

	conn2 := reconnected(t, conn, d, "kept")
	conn2.emit(t, pubsub.Subscribed, "kept")
	heard(t, joined, "a subscriber that joined a subscribed channel was not notified when it was subscribed again on a new connection")
}
