// Package batch pipelines the commands that concurrent callers send to one
// Redis server: while a node's connections are busy, the commands that arrive
// wait in a queue, and the next free sender writes them all at once and reads
// all their replies, as one pipeline. Under load that turns one write and one
// read per command (on the client and on the server) into one per batch. The
// goredis and redigo drivers use it with the commands of package rediscmd;
// rueidis pipelines by itself.
//
// A lone command is sent at once on the caller's goroutine, with the caller's
// context (or a deadline shared by calls, see ShareDeadlines): batching costs
// nothing when there is no contention.
//
// A command whose context carries a network timeout (driver.WithNetworkTimeout)
// waits in the queue for as long as its context allows, and is then bounded on
// the network by that timeout, from the moment its batch is sent; a batch that
// times out when the server has answered nothing for more than twice that
// timeout while it was asked fails the commands queued, which would wait
// behind a server that does not answer. Urgent commands (driver.WithUrgent)
// go before the others. Pending reports the queue. For a far server, more
// batches go at once (see Batcher); Gate, for a client that pipelines by
// itself, bounds the commands in flight the same way.
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
)

// Settings the Redis drivers share.
const (
	// Senders is how many batches a driver's node sends at once (the
	// connections it keeps busy) per millisecond of the server's round
	// trip, and MaxBatch how many commands one holds.
	Senders  = 2
	MaxBatch = 128
	// MaxSendScale bounds how far a Batcher scales its senders by the
	// server's round trip (see Batcher): 16 connections at most with
	// Senders, which the pools of the clients the drivers make hold (64);
	// a smaller pool of a user's client makes the extra senders wait for
	// a connection, as callers sending alone do.
	MaxSendScale = 8
	// CancelLag is the longest a driver's call may take to notice that its
	// context was canceled: a call whose deadline is nearer than that is
	// bounded by the deadline alone, without a goroutine watching the
	// context.
	CancelLag = 250 * time.Millisecond
)

// A Call is one command in a Batcher, with its result once sent.
type Call[C, R any] struct {
	// Cmd is the command, as given to Do.
	Cmd C
	// Res and Err are the result, which the Exec function sets.
	Res R
	Err error

	ctx    context.Context
	done   chan struct{}  // receives once Res and Err are set
	self   [1]*Call[C, R] // the batch of a call sent alone
	state  atomic.Int32   // queued, taken or abandoned
	queued time.Time      // when it joined the queue
}

// The states of a queued call: a sender takes it, or its caller abandons it
// when its context ends first; whichever comes first wins.
const (
	queued = iota
	taken
	abandoned
)

// Ctx returns the context of the call's caller.
func (c *Call[C, R]) Ctx() context.Context { return c.ctx }

// Exec sends calls in one round trip (a pipeline) bounded by ctx, and sets
// each one's Res or Err. With one call, ctx is the caller's own, or with a
// network timeout, the caller's bounded by it, or, when the Batcher shares
// deadlines (see ShareDeadlines), a context that ends at the network
// deadline and carries nothing of the caller's: Call.Ctx is then the
// caller's, for the waits before the command is sent.
// Exec must not use the calls once it returns: they are reused.
type Exec[C, R any] func(ctx context.Context, calls []*Call[C, R])

// Batcher sends the commands given to Do through Exec, at most Senders
// batches at once, each of at most MaxBatch commands, and for a far server
// Senders per millisecond of its round trip: a batch spends its round trip on
// the network, not in the client. A server whose fastest send took d, once
// MinSamples sends one after the other were timed, and d at least
// FarRoundTrip, gets senders × d/1ms batches at once (d rounded up, at most
// MaxSendScale × senders), so that it is not held to senders batches per
// round trip (2 × 128 commands per 40ms would be 6,400 a second at most).
// The fastest answer only goes down: a server whose answers slow down under
// load never gets more senders for it once it answered fast (see Gate for
// what is left).
// Its zero value is not usable: use New. It is safe for concurrent use.
type Batcher[C, R any] struct {
	exec     Exec[C, R]
	base     int // senders per millisecond of round trip
	maxBatch int

	mu      sync.Mutex
	senders int              // base scaled by the round trip (see Batcher)
	rtt     roundTrip        // the server's, learned from the answers
	urgent  fifo[Call[C, R]] // sent first
	normal  fifo[Call[C, R]]
	depth   int     // queued calls not yet taken nor abandoned
	active  int     // senders running: callers sending alone and draining goroutines
	quiet   silence // since when the server answered nothing (see sentLocked)

	calls sync.Pool // of *Call[C, R]

	share bool      // a lone call's network deadline may be shared (see ShareDeadlines)
	due   Deadlines // the shared deadlines
}

// ShareDeadlines lets the calls sent alone share their network deadlines
// (see Deadlines) rather than each make a context with a timer of its own:
// a call whose network timeout is within CancelLag (less a DeadlineStep)
// then runs with a context that carries none of its caller's values and ends
// at its network deadline, rounded up to a DeadlineStep, unless its caller's
// context ends by then (the call then runs with that one). Such a call's
// command notices its caller's cancellation by that deadline at the latest,
// as the drivers' calls so bounded do anyway; an Exec that waits before it
// sends (for a connection) watches Call.Ctx, the caller's context, too. Only
// for an Exec that needs no values of the caller's context (a client the
// driver made, with no user's hooks). Call it before the first Do.
func (b *Batcher[C, R]) ShareDeadlines() { b.share = true }

// New returns a Batcher that sends through exec, with at most senders
// batches in flight at once (connections in use), each of at most maxBatch
// commands, per millisecond of the server's round trip (see Batcher).
func New[C, R any](exec Exec[C, R], senders, maxBatch int) *Batcher[C, R] {
	senders = max(senders, 1)
	return &Batcher[C, R]{exec: exec, base: senders, senders: senders, maxBatch: max(maxBatch, 1)}
}

func (b *Batcher[C, R]) get(ctx context.Context, cmd C) *Call[C, R] {
	c, _ := b.calls.Get().(*Call[C, R])
	if c == nil {
		c = &Call[C, R]{done: make(chan struct{}, 1)}
	}
	c.Cmd, c.ctx = cmd, ctx
	c.state.Store(queued)
	return c
}

// put recycles c, which nothing else refers to any more.
func (b *Batcher[C, R]) put(c *Call[C, R]) {
	c.Cmd, c.Res, c.Err, c.ctx, c.self[0] = *new(C), *new(R), nil, nil, nil
	b.calls.Put(c)
}

// Pending reports the calls waiting in the queue: how many, and how long the
// oldest has waited.
func (b *Batcher[C, R]) Pending() driver.Pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := driver.Pending{Depth: b.depth}
	if b.depth == 0 {
		return p
	}
	p.Oldest = oldestQueued(func(c *Call[C, R]) (time.Time, bool) { return c.queued, c.state.Load() == queued }, &b.urgent, &b.normal)
	return p
}

// Idle reports whether the Batcher has nothing to do: no call waits in its
// queue and no batch is in flight. A driver that keeps one Batcher per
// server may drop an idle one, and make another if the server comes back.
func (b *Batcher[C, R]) Idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.depth == 0 && b.active == 0
}

// Do sends cmd and returns its result. When a sender is free and nothing
// waits, it sends cmd at once on the calling goroutine; otherwise cmd joins
// the next batch. Do returns ctx's error as soon as ctx is done, even while
// cmd's batch is in flight (its outcome is then unknown); a command still
// queued when ctx ends is never sent.
func (b *Batcher[C, R]) Do(ctx context.Context, cmd C) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := b.get(ctx, cmd)
	b.mu.Lock()
	if b.active < b.senders && b.depth == 0 {
		b.active++
		b.quiet.sending()
		b.mu.Unlock()
		c.self[0] = c
		ectx, cancel := ctx, context.CancelFunc(nil)
		d, hasNet := driver.NetworkTimeout(ctx)
		if hasNet {
			ectx, cancel = b.due.Bound(ctx, d, b.share)
		}
		sent := b.rtt.start()
		b.exec(ectx, c.self[:])
		if cancel != nil {
			cancel()
		}
		var timeout time.Duration // of the send, if it timed out on the network (see sentLocked)
		switch {
		case c.Err != nil && ctx.Err() != nil: // cut short by its caller
			timeout = CutShort
		case !connalive.Timeout(c.Err): // answered
		case hasNet:
			timeout = d
		default:
			timeout = CutShort
		}
		if c.Err != nil { // not a reply: an error of the connection, or none
			sent = time.Time{}
		}
		b.release(timeout, sent)
		res, err := c.Res, networkError(ctx, c.Err)
		b.put(c)
		return res, err
	}
	c.queued = time.Now()
	if driver.Urgent(ctx) {
		b.urgent.push(c)
	} else {
		b.normal.push(c)
	}
	b.depth++
	if b.active < b.senders {
		b.active++
		go b.drain()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		select {
		case <-c.done: // the result came too
		default:
			if c.state.CompareAndSwap(queued, abandoned) {
				// Never sent: the sender that pops it recycles it.
				b.mu.Lock()
				b.depth--
				b.mu.Unlock()
			} // else c is in flight: its sender still writes to it
			return zero, ctx.Err()
		}
	}
	res, err := c.Res, networkError(ctx, c.Err)
	b.put(c)
	return res, err
}

// release gives up a sender's turn, handing it to a new draining goroutine
// when commands wait, unless more senders than allowed run (see Batcher).
// timeout and sent are as sentLocked takes them.
func (b *Batcher[C, R]) release(timeout time.Duration, sent time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sentLocked(timeout, sent)
	if b.urgent.len()+b.normal.len() > 0 && b.active <= b.senders {
		go b.drain()
		return
	}
	b.active--
}

// errStalled is the error of the calls failed by failQueuedLocked: their
// network timeout, in effect.
var errStalled = fmt.Errorf("not sent: the server did not answer the commands sent before: %w", context.DeadlineExceeded)

// networkError makes the error of a call sent with a network timeout match
// context.DeadlineExceeded when it timed out, as when a context's deadline
// bounds the call.
func networkError(ctx context.Context, err error) error {
	if _, ok := driver.NetworkTimeout(ctx); ok && connalive.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return err
}

// CutShort is the timeout, for Batcher's sends and Gate.Exit, of a send
// that ended without an answer and without a network timeout to judge the
// server by: its callers' contexts ended.
const CutShort = time.Duration(-1)

// sentLocked records the end of a send, which timed out on the network
// after timeout if that is positive, was cut short by its callers' contexts
// if it is CutShort (no answer, and no judgement of the server), and was
// answered if it is 0. When the server has answered nothing for more than
// twice the network timeout while it was asked (see silence), the queued
// calls fail: they would wait behind a server that does not answer (a
// stalled one). A server that answers some sends, however slowly, keeps its
// queue, and so does one whose first send, or first after a quiet spell,
// timed out. sent is when a send whose every command had a reply began, or
// zero: by its time the senders scale (see Batcher); more senders start at
// once when commands wait. b.mu is held.
func (b *Batcher[C, R]) sentLocked(timeout time.Duration, sent time.Time) {
	now := time.Now()
	if timeout == CutShort {
		return
	}
	if timeout == 0 {
		b.quiet.answer(now)
		b.senders = b.base * b.rtt.learn(sent, now, MaxSendScale)
		for more := b.depth; b.active < b.senders && more > 0; more -= b.maxBatch {
			b.active++
			go b.drain()
		}
		return
	}
	if b.quiet.longer(now, 2*timeout) {
		b.failQueuedLocked()
	}
}

// failQueuedLocked fails the queued calls. b.mu is held.
func (b *Batcher[C, R]) failQueuedLocked() {
	for _, q := range []*fifo[Call[C, R]]{&b.urgent, &b.normal} {
		for q.len() > 0 {
			c := q.pop()
			if !c.state.CompareAndSwap(queued, taken) {
				b.put(c) // abandoned by its caller
				continue
			}
			b.depth--
			c.Err = errStalled
			c.done <- struct{}{}
		}
	}
}

// drain sends the queued commands, batch after batch, until none is left or
// more senders than allowed run (see Batcher).
func (b *Batcher[C, R]) drain() {
	var batch []*Call[C, R]
	for {
		b.mu.Lock()
		if b.active > b.senders {
			// The senders went down (a faster answer): this one stops.
			b.active--
			b.mu.Unlock()
			return
		}
		for len(batch) < b.maxBatch {
			q := &b.urgent
			if q.len() == 0 {
				q = &b.normal
			}
			if q.len() == 0 {
				break
			}
			c := q.pop()
			if !c.state.CompareAndSwap(queued, taken) {
				b.put(c) // abandoned by its caller
				continue
			}
			b.depth--
			batch = append(batch, c)
		}
		if len(batch) == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		// The batch goes now (its calls whose contexts ended meanwhile
		// excepted: see send): the server is asked from now on.
		b.quiet.sending()
		b.mu.Unlock()
		sent := b.rtt.start()
		timeout, replied := b.send(batch)
		if !replied {
			sent = time.Time{}
		}
		b.mu.Lock()
		b.sentLocked(timeout, sent)
		b.mu.Unlock()
		clear(batch)
		batch = batch[:0]
	}
}

// send sends a batch taken from the queue and hands each call its result.
// Calls whose context ended while they waited are answered with its error
// and not sent. It returns what sentLocked takes: 0 if the server answered
// a call of the batch; the batch's network timeout if every call timed out
// on the network (each has a network timeout, and failed with a timeout
// while its own context had not ended); CutShort if they timed out, some by
// their callers' contexts, or if none was sent. replied reports whether
// every call sent had a reply (no error), for the round trip (see Batcher).
func (b *Batcher[C, R]) send(batch []*Call[C, R]) (timeout time.Duration, replied bool) {
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.Err = err
			c.done <- struct{}{}
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return CutShort, false // nothing sent: nothing learned of the server
	}
	ctx, cancel := batchContext(live)
	b.exec(ctx, live)
	cancel()
	replied = true
	for _, c := range live {
		replied = replied && c.Err == nil
	}
	for _, c := range live {
		if !connalive.Timeout(c.Err) { // answered
			timeout = 0
			break
		}
		d, hasNet := driver.NetworkTimeout(c.ctx)
		switch {
		case timeout == CutShort:
		case !hasNet || c.ctx.Err() != nil:
			timeout = CutShort
		case d > timeout:
			timeout = d
		}
	}
	for _, c := range live {
		c.done <- struct{}{}
	}
	return timeout, replied
}

// batchContext returns the context of a batch: the values of its first call's
// context, no cancellation (each caller watches its own), and the latest of
// the calls' deadlines, so that no call is cut short by another's; none if a
// call has none. The deadline of a call with a network timeout is that
// timeout from now, or its context's deadline if sooner.
func batchContext[C, R any](calls []*Call[C, R]) (context.Context, context.CancelFunc) {
	var latest time.Time
	now := time.Now()
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if t, hasNet := driver.NetworkTimeout(c.ctx); hasNet && (!ok || now.Add(t).Before(d)) {
			d, ok = now.Add(t), true
		}
		if !ok {
			return context.WithoutCancel(calls[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), latest)
}
