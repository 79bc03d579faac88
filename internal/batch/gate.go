package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// A Gate bounds the commands a node hands at once to a client that pipelines
// them by itself (rueidis): a command enters when fewer than the limit are in
// flight, and otherwise waits in a queue, urgent commands (driver.WithUrgent)
// first, for as long as its context allows, until one in flight exits. So the
// client's own queue never holds more than the limit, and a command's network
// timeout (driver.WithNetworkTimeout), started once it enters, bounds its time
// on the network rather than its wait behind thousands of others handed over
// at once. Pending reports the queue.
//
// The limit is per millisecond of the node's round trip, for a far node: a
// command in flight is either in the client's queue or on the network, and
// only the first is what the limit is for. A node whose fastest answer took
// d, once MinSamples round trips one after the other were timed, and d at
// least FarRoundTrip, carries limit × d/1ms commands at once (d rounded up,
// at most MaxScale × limit), so that a far node, whose commands spend their
// time on the network, is not held to limit commands per round trip (with 64
// and a node 40ms away, 1,600 a second at most), behind which its queue grew
// for as long as the load lasted. The fastest answer only goes down, so a
// node whose answers slow down under load never gets a larger limit for it
// once it answered fast; what is left is a node whose first MinSamples round
// trips all took FarRoundTrip or more, as under a storm of calls from its
// very start, which scales until one faster answer comes.
//
// As a Batcher does, a Gate fails the commands waiting in its queue when a
// command times out on the network and the server has answered nothing for
// more than twice that timeout while it was asked (see silence): they would
// wait behind a server that does not answer.
//
// Use NewGate; a Gate is safe for concurrent use.
type Gate struct {
	base int // the limit per millisecond of round trip

	mu       sync.Mutex
	limit    int       // base scaled by the round trip (see Gate)
	rtt      roundTrip // the server's, learned from the answers
	inFlight int       // entered and not exited
	urgent   fifo[waiter]
	normal   fifo[waiter]
	depth    int     // waiters queued, neither admitted nor abandoned
	quiet    silence // since when the server answered nothing (see Exit)

	waiters sync.Pool // of *waiter
}

// A waiter is a command waiting in a Gate's queue.
type waiter struct {
	ready  chan error // receives nil when admitted, or the error that fails it
	queued time.Time
	state  atomic.Int32 // queued, taken (admitted or failed) or abandoned
}

// MaxScale bounds how far a Gate scales its limit by the node's round trip
// (see Gate).
const MaxScale = 16

// NewGate returns a Gate that lets at most limit commands in flight at once
// (at least one) per millisecond of the node's round trip.
func NewGate(limit int) *Gate {
	limit = max(limit, 1)
	return &Gate{base: limit, limit: limit}
}

// Enter waits until a command may be handed to the client: at once when
// fewer than the limit are in flight and none waits, or else when its turn
// comes in the queue. It returns ctx's error if ctx ends first, and an error
// matching context.DeadlineExceeded if the queue is failed behind a server
// that does not answer; the command must not be sent then. After a nil
// return, the caller must call Exit once the command has returned.
func (g *Gate) Enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	if g.inFlight < g.limit && g.depth == 0 {
		g.inFlight++
		g.quiet.sending()
		g.mu.Unlock()
		return nil
	}
	w, _ := g.waiters.Get().(*waiter)
	if w == nil {
		w = &waiter{ready: make(chan error, 1)}
	}
	w.queued = time.Now()
	w.state.Store(queued)
	if driver.Urgent(ctx) {
		g.urgent.push(w)
	} else {
		g.normal.push(w)
	}
	g.depth++
	// Places may be free: a waiter that abandoned its place in the queue
	// was still counted in depth when the last command in flight exited.
	for g.inFlight < g.limit && g.admitLocked() {
		g.inFlight++
	}
	g.mu.Unlock()
	select {
	case err := <-w.ready:
		g.waiters.Put(w) // popped from its queue: nothing else refers to it
		return err
	case <-ctx.Done():
	}
	if w.state.CompareAndSwap(queued, abandoned) {
		// Left in its queue, which drops it when it pops it.
		g.mu.Lock()
		g.depth--
		g.mu.Unlock()
		return ctx.Err()
	}
	// Taken as ctx ended: admitted (its place is passed on) or failed.
	err := <-w.ready
	g.waiters.Put(w)
	if err == nil {
		g.pass()
	}
	return ctx.Err()
}

// Exit gives back the place of a command that entered. timeout is the
// command's network timeout if it timed out on the network (its own context
// had not ended), CutShort if its caller's context ended before an answer
// (nothing is learned of the server), and 0 when the server answered (see
// Gate); sent is then when it was handed to the client, if it had a reply
// of the server's (not an error of the connection), and otherwise zero.
func (g *Gate) Exit(timeout time.Duration, sent time.Time) {
	g.mu.Lock()
	now := time.Now()
	switch {
	case timeout == 0:
		g.quiet.answer(now)
		g.limit = g.base * g.rtt.learn(sent, now, MaxScale)
	case timeout > 0 && g.quiet.longer(now, 2*timeout):
		g.failQueuedLocked()
	}
	g.passLocked()
	for g.inFlight < g.limit && g.admitLocked() {
		g.inFlight++
	}
	g.mu.Unlock()
}

// Start returns what to pass to Exit or Learn as the time a command is sent
// now: the time, or zero once the server is known to be near (nothing is
// learned from it then).
func (g *Gate) Start() time.Time { return g.rtt.start() }

// Learn times a reply to a command sent at sent outside the Gate (on a
// connection of its own): the round trip it scales by (see Gate) is learned
// from every reply. Once the server is known to be near, it costs a load.
func (g *Gate) Learn(sent time.Time) {
	if sent.IsZero() || g.rtt.near.Load() {
		return
	}
	g.mu.Lock()
	g.limit = g.base * g.rtt.learn(sent, time.Now(), MaxScale)
	for g.inFlight < g.limit && g.admitLocked() {
		g.inFlight++
	}
	g.mu.Unlock()
}

// Limit returns how many commands the Gate lets in flight at once now.
func (g *Gate) Limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit
}

// pass gives the place of an admitted command that will not be sent to the
// next waiter, if any.
func (g *Gate) pass() {
	g.mu.Lock()
	g.passLocked()
	g.mu.Unlock()
}

// passLocked hands a place in flight to the first waiter, urgent ones first,
// or frees it when none waits or more than the limit are in flight. g.mu is
// held.
func (g *Gate) passLocked() {
	if g.inFlight > g.limit || !g.admitLocked() {
		g.inFlight--
	}
}

// admitLocked admits the first waiter, urgent ones first, and reports
// whether there was one; the caller accounts for its place. g.mu is held.
func (g *Gate) admitLocked() bool {
	for _, q := range []*fifo[waiter]{&g.urgent, &g.normal} {
		for q.len() > 0 {
			w := q.pop()
			if !w.state.CompareAndSwap(queued, taken) {
				continue // abandoned by its caller
			}
			g.depth--
			g.quiet.sending()
			w.ready <- nil
			return true
		}
	}
	return false
}

// failQueuedLocked fails every waiter. g.mu is held.
func (g *Gate) failQueuedLocked() {
	for _, q := range []*fifo[waiter]{&g.urgent, &g.normal} {
		for q.len() > 0 {
			w := q.pop()
			if w.state.CompareAndSwap(queued, taken) {
				g.depth--
				w.ready <- errStalled
			}
		}
	}
}

// Pending reports the commands waiting to enter: how many, and how long the
// oldest has waited.
func (g *Gate) Pending() driver.Pending {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := driver.Pending{Depth: g.depth}
	if g.depth == 0 {
		return p
	}
	p.Oldest = oldestQueued(func(w *waiter) (time.Time, bool) { return w.queued, w.state.Load() == queued }, &g.urgent, &g.normal)
	return p
}
