// Package pubsub shares one pub/sub connection per node among all the
// subscribers of that node, for the Redis drivers' driver.Notifier.
//
// A [Hub] holds, per channel, the set of subscribers. It sends SSUBSCRIBE when
// the first subscriber of a channel arrives and SUNSUBSCRIBE when the last one
// leaves, over one connection that it makes on first use with the driver's
// [Dialer]. One goroutine reads the connection and delivers each message to
// the channel's subscribers with a send that never blocks; another sends the
// SSUBSCRIBE and SUNSUBSCRIBE commands, so that a caller of [Hub.Subscribe]
// only ever waits on channels and its context. The drivers implement [Conn]
// over their clients; everything else lives here.
//
// At most one SSUBSCRIBE or SUNSUBSCRIBE of a channel is unconfirmed at a time,
// so that each confirmation the server sends is known to answer the command
// it confirms.
//
// When the connection breaks, the Subscribe calls waiting for a confirmation
// fail and the hub drops the connection. Subscriptions already confirmed are
// kept: a new connection subscribes again to every channel that still has
// subscribers, and once the server confirms a channel there, each of its
// subscribers is notified once, since a release may have been published
// while there was no connection. A hub from [New] makes it itself, relinkFirst after the break
// and then at doubling intervals up to relinkMax while it cannot connect, or
// while its connections break before the server confirms a channel on them,
// for as long as it has subscribers; the next Subscribe (or [Hub.Reconnect]) makes
// it at once. Until then they hear nothing, and redlock's waiters fall back to
// polling. On a cluster, the [Router] reconnects a shard's hub itself, or
// moves its subscribers to the replica that a failover promoted.
//
// A cluster-enabled server given as one server refuses a SSUBSCRIBE of
// channels in several hash slots (CROSSSLOT): the connection fails as on any
// error, and the hub's later connections send one command per channel.
//
// A MOVED reply to a SSUBSCRIBE (the channel's slot is served by another
// shard of a Redis Cluster) is not a broken connection: it concerns the
// channels of its slot only. The hub forgets those that wait for their
// confirmation, and their subscribers: the Subscribe calls waiting for them
// return an error that [IsMoved] recognizes, and on a hub from [NewMoving]
// the moved function hears of the channels whose subscribers it forgot,
// such as those confirmed on an earlier connection and being subscribed again
// (see [Router]). The connection and its other channels stay.
package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/replyerr"
)

// state is where a channel stands on the hub's connection.
type state int

const (
	unsubscribed  state = iota // not subscribed, nothing pending
	subscribing                // SSUBSCRIBE sent, not yet confirmed
	subscribed                 // SSUBSCRIBE confirmed
	unsubscribing              // SUNSUBSCRIBE sent, not yet confirmed
)

// Hub shares one pub/sub connection among subscribers; see the package
// documentation. Its methods are safe for concurrent use.
type Hub struct {
	dial  Dialer
	moved func(channel string) // see NewMoving; nil for a single server
	lost  func()               // see NewMoving; nil for a single server
	wg    sync.WaitGroup       // the goroutines of every session
	// bySlot is set once the server refused a command for channels in
	// several hash slots (CROSSSLOT: a cluster-enabled server given as one
	// server): the hub then sends one command per channel, as on a shard.
	bySlot atomic.Bool

	quit        chan struct{} // closed by Closing and Close: ends relink
	quitOnce    sync.Once
	relinkFirst time.Duration // relinkFirst, but for tests

	mu        sync.Mutex
	closed    bool
	relinking bool // relink runs (a hub from New only)
	// relinkNext is how long the next relink waits before its first try
	// (0: relinkFirst): it goes on doubling from where the last relink
	// stopped while the connections it makes break before any channel is
	// confirmed on them, and starts again from relinkFirst once one is.
	relinkNext time.Duration
	sess       *session // the current connection, nil if none
	channels   map[string]*channel
	dirty      map[string]struct{} // channels whose subscribers changed since the writer looked
}

// channel is one channel's subscribers and its state on the current session.
type channel struct {
	subs  map[*sub]struct{}
	state state
	ready *wait // for the Subscribe calls waiting for a confirmation; nil if none
}

// wait is what the Subscribe calls that wait for a channel's SSUBSCRIBE to be
// confirmed wait on.
type wait struct {
	done chan struct{} // closed when the SSUBSCRIBE is confirmed or refused
	err  error         // set before done is closed when it was refused (MOVED)
}

// end ends w with err, nil for a confirmation.
func (w *wait) end(err error) {
	w.err = err
	close(w.done)
}

// sub is one subscriber of a channel. heard is set once the channel's
// SSUBSCRIBE was confirmed for it (guarded by Hub.mu): when a new connection
// confirms the channel again, such a subscriber is notified, since a release
// may have been published while it heard nothing.
type sub struct {
	notify chan<- struct{}
	heard  bool
}

// session is one connection and its goroutines.
type session struct {
	ctx    context.Context // canceled when the session ends
	cancel context.CancelFunc
	kick   chan struct{} // wakes the writer; capacity 1
	dead   chan struct{} // closed when the session ends, after err is set
	up     chan struct{} // closed once the connection is dialed
	err    error

	closeOnce sync.Once
	conn      Conn // set once dialed; guarded by Hub.mu
}

// New returns a hub that makes its connection with dial when first needed.
func New(dial Dialer) *Hub {
	return &Hub{
		dial:        dial,
		channels:    make(map[string]*channel),
		dirty:       make(map[string]struct{}),
		quit:        make(chan struct{}),
		relinkFirst: relinkFirst,
	}
}

// NewMoving returns a hub for one shard of a Redis Cluster: when the server
// unsubscribes a channel that still has subscribers on its own (as Redis 7
// does with SSUBSCRIBE when the channel's slot moves to another shard), or
// answers MOVED to the SSUBSCRIBE that subscribes again subscribers already
// confirmed (after a new connection), the hub forgets the channel and its
// subscribers, whose cancel functions then do nothing, and calls moved, with
// no lock held, for its owner to subscribe them again where the slot went
// (see [Router]). A Subscribe call that waits for the confirmation of a
// channel answered MOVED returns an error that [IsMoved] recognizes. When
// the connection fails, or cannot be dialed, the hub calls lost, with no
// lock held, for its owner to find out whether the shard's primary was
// replaced (a failover) and to [Hub.Reconnect] it if not.
func NewMoving(dial Dialer, moved func(channel string), lost func()) *Hub {
	h := New(dial)
	h.moved, h.lost = moved, lost
	return h
}

// SubscribeRelease is a driver's Subscribe (driver.Notifier): Subscribe to
// driver.ReleaseChannel(key), with an error that names driverName and
// matches ctx's error when ctx is done. On a hub of one server (from New),
// a MOVED reply's error matches driver.ErrClusterServer, as the lock calls'
// of a node of one server do (see driver.OneServerError).
func (h *Hub) SubscribeRelease(ctx context.Context, driverName, key string, notify chan<- struct{}) (cancel func(), err error) {
	cancel, err = h.Subscribe(ctx, driver.ReleaseChannel(key), notify)
	if err != nil {
		if h.moved == nil {
			// A hub of one server, whose node follows no redirection: a
			// MOVED reply (a cluster's server given as one) fails the
			// node's lock calls on the key for good, and its
			// subscriptions too (driver.OneServerError).
			err = driver.OneServerError(err)
		}
		return nil, fmt.Errorf("%s: subscribe: %w", driverName, driver.ContextError(ctx, err))
	}
	return cancel, nil
}

// Subscribe arranges for a send on notify, without blocking, for each
// message published on channel, until cancel is called; after cancel returns,
// nothing more is sent. Subscribe returns once the server has confirmed the
// subscription (at once if the channel is already subscribed), or with an
// error: ctx.Err() when ctx ends first, [driver.ErrClosed] after Close, the
// connection's error when it fails first, or the server's MOVED reply to the
// SSUBSCRIBE (see [IsMoved]), which leaves the connection and its other
// channels as they were.
func (h *Hub) Subscribe(ctx context.Context, name string, notify chan<- struct{}) (cancel func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, driver.ErrClosed
	}
	c := h.channels[name]
	if c == nil {
		c = &channel{subs: make(map[*sub]struct{})}
		h.channels[name] = c
	}
	s := &sub{notify: notify}
	c.subs[s] = struct{}{}
	var once sync.Once
	cancel = func() { once.Do(func() { h.remove(name, s) }) }
	if h.sess == nil {
		h.start()
	}
	sess := h.sess
	if c.state == subscribed {
		s.heard = true
		h.mu.Unlock()
		return cancel, nil
	}
	if c.ready == nil {
		c.ready = &wait{done: make(chan struct{})}
	}
	ready := c.ready
	h.markLocked(sess, name)
	h.mu.Unlock()

	select {
	case <-ready.done:
		if ready.err != nil {
			cancel() // the hub forgot the channel: does nothing
			return nil, ready.err
		}
		return cancel, nil
	case <-sess.dead:
		cancel()
		return nil, sess.err
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// remove removes a subscriber, and unsubscribes its channel if it was the
// last.
func (h *Hub) remove(name string, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.channels[name]
	if c == nil {
		return // its channel moved away
	}
	if _, ok := c.subs[s]; !ok {
		return // its channel moved away
	}
	delete(c.subs, s)
	if len(c.subs) > 0 {
		return
	}
	if c.state == unsubscribed {
		delete(h.channels, name)
		return
	}
	if h.sess != nil {
		h.markLocked(h.sess, name)
	}
}

// markLocked asks the writer of sess to bring name's state in line with its
// subscribers.
func (h *Hub) markLocked(sess *session, name string) {
	h.dirty[name] = struct{}{}
	select {
	case sess.kick <- struct{}{}:
	default:
	}
}

// start starts a new session, which dials in its own goroutine.
func (h *Hub) start() {
	ctx, cancel := context.WithCancel(context.Background())
	sess := &session{ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), dead: make(chan struct{}), up: make(chan struct{})}
	h.sess = sess
	h.wg.Add(1)
	go h.run(sess)
}

// run dials, then reads the connection until it fails.
func (h *Hub) run(sess *session) {
	defer h.wg.Done()
	conn, err := h.dial(sess.ctx)
	if err != nil {
		h.fail(sess, err)
		return
	}
	h.mu.Lock()
	if h.sess != sess { // closed while dialing
		h.mu.Unlock()
		conn.Close()
		return
	}
	sess.conn = conn
	close(sess.up)
	// Subscribe every channel that has subscribers, including those that a
	// failed connection had subscribed.
	for name, c := range h.channels {
		if len(c.subs) > 0 {
			h.markLocked(sess, name)
		}
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go h.write(sess, conn)
	for {
		ev, err := conn.Receive(sess.ctx)
		if slot, ok := movedSlot(err); ok {
			// A reply to a SSUBSCRIBE (the go-redis PubSub returns it
			// from Receive): the connection is fine.
			if !h.refused(sess, slot, err) {
				return
			}
			continue
		}
		if err != nil {
			h.fail(sess, err)
			return
		}
		ok, moved := h.handle(sess, ev)
		if moved {
			h.moved(ev.Channel)
		}
		if !ok {
			return
		}
	}
}

// handle applies one event; it returns false if sess is no longer current,
// and moved when the event moved the channel away (see NewMoving).
func (h *Hub) handle(sess *session, ev Event) (ok, moved bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess {
		return false, false
	}
	c := h.channels[ev.Channel]
	if c == nil {
		return true, false
	}
	switch ev.Kind {
	case Message:
		for s := range c.subs {
			wake(s.notify)
		}
	case Subscribed:
		if c.state != subscribing {
			return true, false
		}
		c.state = subscribed
		h.relinkNext = 0 // the connection works: a later break relinks soon
		for s := range c.subs {
			if s.heard {
				// Subscribed again on a new connection: a message may
				// have been published while there was none.
				wake(s.notify)
			}
			s.heard = true
		}
		if c.ready != nil {
			c.ready.end(nil)
			c.ready = nil
		}
		if len(c.subs) == 0 {
			h.markLocked(sess, ev.Channel)
		}
	case Unsubscribed:
		if c.state == subscribed && h.moved != nil {
			// Not asked for: the channel's slot left this shard.
			delete(h.channels, ev.Channel)
			return true, len(c.subs) > 0
		}
		if c.state != unsubscribing {
			return true, false
		}
		c.state = unsubscribed
		if len(c.subs) == 0 {
			delete(h.channels, ev.Channel)
		} else {
			h.markLocked(sess, ev.Channel)
		}
	}
	return true, false
}

// write sends the SSUBSCRIBE and SUNSUBSCRIBE commands that the changes of
// subscribers call for, until the session ends.
func (h *Hub) write(sess *session, conn Conn) {
	defer h.wg.Done()
	for {
		select {
		case <-sess.kick:
		case <-sess.ctx.Done():
			return
		}
		subs, unsubs, ok := h.pending(sess)
		if !ok {
			return
		}
		err := h.send(sess, conn.Subscribe, subs)
		if err == nil {
			err = h.send(sess, conn.Unsubscribe, unsubs)
		}
		if err != nil {
			h.fail(sess, err)
			return
		}
	}
}

// send sends one command for the channels, or on a cluster's shard (a hub
// from NewMoving) or a cluster-enabled server (see bySlot) one per channel:
// their channels must share a slot. A MOVED reply that cmd returns (as the
// rueidis family's dedicated clients return the reply to a SSUBSCRIBE)
// concerns its slot only (see refused); send goes on with the other
// channels.
func (h *Hub) send(sess *session, cmd func(context.Context, ...string) error, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	if h.moved == nil && !h.bySlot.Load() {
		return h.sendOne(sess, cmd, channels)
	}
	for i := range channels {
		if err := h.sendOne(sess, cmd, channels[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}

// sendOne sends one command for the channels; a MOVED reply is applied to
// their slot (see refused), and is no error unless sess is over.
func (h *Hub) sendOne(sess *session, cmd func(context.Context, ...string) error, channels []string) error {
	err := cmd(sess.ctx, channels...)
	if slot, ok := movedSlot(err); ok {
		if !h.refused(sess, slot, err) {
			return driver.ErrClosed // sess is over: write stops
		}
		return nil
	}
	return err
}

// refused applies the server's MOVED reply err, for slot, to a SSUBSCRIBE
// (or a SUNSUBSCRIBE) of sess: the slot is served by another shard. The
// channels of the slot that wait for a confirmation are forgotten, with
// their subscribers, whose cancel functions then do nothing: the Subscribe
// calls waiting for them return an error that IsMoved recognizes, and moved
// (on a hub from NewMoving) hears of those that have subscribers, with no
// lock held. A channel whose SSUBSCRIBE is still to be answered is answered
// MOVED too, which then finds nothing to do, as does a MOVED reply to a
// SUNSUBSCRIBE. refused returns false if sess is no longer current.
func (h *Hub) refused(sess *session, slot int, err error) bool {
	var moved []string
	h.mu.Lock()
	if h.sess != sess {
		h.mu.Unlock()
		return false
	}
	for name, c := range h.channels {
		if c.state != subscribing || driver.HashSlot(name) != slot {
			continue
		}
		delete(h.channels, name)
		delete(h.dirty, name)
		if c.ready != nil {
			c.ready.end(movedError{err})
			c.ready = nil
		}
		if len(c.subs) > 0 && h.moved != nil {
			moved = append(moved, name)
		}
	}
	h.mu.Unlock()
	for _, name := range moved {
		h.moved(name)
	}
	return true
}

// movedSlot returns the slot of the MOVED reply ("MOVED 3999
// 127.0.0.1:6381") in err's chain, if there is one.
func movedSlot(err error) (slot int, ok bool) {
	ok = replyerr.Find(err, func(msg string) bool {
		rest, moved := strings.CutPrefix(msg, "MOVED ")
		s, _, _ := strings.Cut(rest, " ")
		n, convErr := strconv.Atoi(s)
		if !moved || convErr != nil || n < 0 || n >= driver.Slots {
			return false
		}
		slot = n
		return true
	})
	return slot, ok
}

// crossSlot reports whether a CROSSSLOT error reply is in err's chain.
func crossSlot(err error) bool {
	return replyerr.Find(err, func(msg string) bool { return strings.HasPrefix(msg, "CROSSSLOT ") })
}

// movedError is the error of a Subscribe whose SSUBSCRIBE the server
// answered with MOVED.
type movedError struct{ err error }

func (e movedError) Error() string { return "SSUBSCRIBE: " + e.err.Error() }
func (e movedError) Unwrap() error { return e.err }

// IsMoved reports whether err is the error of a Subscribe whose SSUBSCRIBE
// the server answered with MOVED: the channel's slot is served by another
// shard of the Redis Cluster.
func IsMoved(err error) bool {
	var m movedError
	return errors.As(err, &m)
}

// pending returns the channels to subscribe and to unsubscribe now, and
// marks them as sent; ok is false if sess is no longer current.
func (h *Hub) pending(sess *session) (subs, unsubs []string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sess != sess {
		return nil, nil, false
	}
	for name := range h.dirty {
		c := h.channels[name]
		switch {
		case c == nil:
		case len(c.subs) > 0 && c.state == unsubscribed:
			c.state = subscribing
			subs = append(subs, name)
		case len(c.subs) == 0 && c.state == subscribed:
			c.state = unsubscribing
			unsubs = append(unsubs, name)
		}
		// Channels in flight are marked again when their confirmation comes.
	}
	clear(h.dirty)
	return subs, unsubs, true
}

// fail ends sess with err, if it is still current: waiting Subscribe calls
// return err, and the next Subscribe starts a new session. After a
// CROSSSLOT reply, the sessions that follow send one command per channel.
func (h *Hub) fail(sess *session, err error) {
	if crossSlot(err) {
		h.bySlot.Store(true)
	}
	h.mu.Lock()
	lost, relink := false, false
	if h.sess == sess {
		h.sess = nil
		for name, c := range h.channels {
			c.state, c.ready = unsubscribed, nil
			if len(c.subs) == 0 {
				delete(h.channels, name)
			}
		}
		clear(h.dirty)
		if h.closed {
			err = driver.ErrClosed // whatever the closing did to the connection
		}
		if !errors.Is(err, driver.ErrClosed) {
			err = fmt.Errorf("pub/sub connection: %w", err)
			lost = h.lost != nil
			relink = h.lost == nil && !h.relinking && len(h.channels) > 0
		}
		sess.err = err
		close(sess.dead)
	}
	if relink {
		h.relinking = true
		h.wg.Add(1) // under mu, with closed false: before Close waits
	}
	conn := sess.conn
	h.mu.Unlock()
	sess.cancel()
	if conn != nil {
		sess.closeOnce.Do(func() { conn.Close() })
	}
	if lost {
		h.lost()
	}
	if relink {
		go h.relink()
	}
}

// How a hub from New makes a new connection itself after its connection
// broke (see relink).
const (
	relinkFirst = 50 * time.Millisecond // after the break
	relinkMax   = time.Second           // the longest interval between tries
	relinkWait  = 10 * time.Second      // the longest wait for one try
)

// relink makes a new connection for the subscribers of a hub from New whose
// connection broke: relinkFirst after the break, then at doubling intervals up
// to relinkMax, until a connection is up, no subscriber is left, or the hub
// closes. A connection that breaks later starts relink again (see fail).
func (h *Hub) relink() {
	defer h.wg.Done()
	h.mu.Lock()
	first := h.relinkNext
	h.mu.Unlock()
	if first <= 0 {
		first = h.relinkFirst
	}
	t := time.NewTimer(first)
	defer t.Stop()
	for d := first; ; d = min(2*d, relinkMax) {
		select {
		case <-t.C:
		case <-h.quit:
			h.mu.Lock()
			h.relinking = false
			h.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), relinkWait)
		err := h.Reconnect(ctx)
		cancel()
		h.mu.Lock()
		if h.closed || err == nil && h.sess != nil || !h.hasSubscribersLocked() {
			// A connection that breaks before any channel is
			// confirmed on it (the server refuses the SSUBSCRIBE,
			// say) is relinked later, not every relinkFirst.
			h.relinkNext = min(2*d, relinkMax)
			h.relinking = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		t.Reset(min(2*d, relinkMax))
	}
}

// hasSubscribersLocked reports whether a channel has subscribers. h.mu is
// held.
func (h *Hub) hasSubscribersLocked() bool {
	for _, c := range h.channels {
		if len(c.subs) > 0 {
			return true
		}
	}
	return false
}

// Reconnect makes a new connection if the hub has none and has
// subscribers, which it subscribes again, and returns once it is dialed
// (nil), or with the error of the dial, ctx's error, or [driver.ErrClosed]
// after Close. With a connection, or without subscribers, it returns nil at
// once.
func (h *Hub) Reconnect(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return driver.ErrClosed
	}
	if h.sess == nil {
		if !h.hasSubscribersLocked() {
			h.mu.Unlock()
			return nil
		}
		h.start()
	}
	sess := h.sess
	h.mu.Unlock()
	select {
	case <-sess.up:
		return nil
	case <-sess.dead:
		return sess.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Closing marks the hub closed without waiting: Subscribe calls still waiting,
// and later ones, return [driver.ErrClosed], whatever happens to the
// connection meanwhile. Close does it too; call Closing first when a node's own
// shutdown breaks the connection before it calls Close.
func (h *Hub) Closing() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.quitOnce.Do(func() { close(h.quit) })
}

// Close closes the connection and waits for the hub's goroutines to end,
// which includes waiting for a Dialer that ignores its context. Subscribe
// calls still waiting return [driver.ErrClosed], and so do later ones; the
// cancel functions of earlier ones may still be called. Close is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	sess := h.sess
	h.mu.Unlock()
	h.quitOnce.Do(func() { close(h.quit) })
	if sess != nil {
		h.fail(sess, driver.ErrClosed)
	}
	h.wg.Wait()
}

// wake sends on notify without blocking: a subscriber that has not taken
// the last notification yet gets no second one.
func wake(notify chan<- struct{}) {
	select {
	case notify <- struct{}{}:
	default:
	}
}
