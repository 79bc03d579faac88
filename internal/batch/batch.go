// Package batch pipelines the commands that concurrent callers send to one
// Redis server: while a node's connections are busy, the commands that arrive
// wait in a queue, and the next free sender writes them all at once and reads
// all their replies, as one pipeline. Under load that turns one write and one
// read per command (on the client and on the server) into one per batch. The
// goredis and redigo drivers use it with the commands of package rediscmd;
// rueidis pipelines by itself.
//
// A lone command is sent at once on the caller's goroutine, with the caller's
// context: batching costs nothing when there is no contention.
package batch

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Settings the Redis drivers share.
const (
	// Senders is how many batches a driver's node sends at once (the
	// connections it keeps busy), and MaxBatch how many commands one holds.
	Senders  = 2
	MaxBatch = 128
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

	ctx  context.Context
	done chan struct{}  // receives once Res and Err are set
	self [1]*Call[C, R] // the batch of a call sent alone
}

// Ctx returns the context of the call's caller.
func (c *Call[C, R]) Ctx() context.Context { return c.ctx }

// Exec sends calls in one round trip (a pipeline) bounded by ctx, and sets
// each one's Res or Err. With one call, ctx is the caller's own.
// Exec must not use the calls once it returns: they are reused.
type Exec[C, R any] func(ctx context.Context, calls []*Call[C, R])

// Batcher sends the commands given to Do through Exec, at most Senders
// batches at once, each of at most MaxBatch commands. Its zero value is not
// usable: use New. It is safe for concurrent use.
type Batcher[C, R any] struct {
	exec     Exec[C, R]
	senders  int
	maxBatch int

	mu     sync.Mutex
	queue  []*Call[C, R]
	active int // senders running: callers sending alone and draining goroutines

	calls sync.Pool // of *Call[C, R]
}

// New returns a Batcher that sends through exec, with at most senders
// batches in flight at once (connections in use), each of at most maxBatch
// commands.
func New[C, R any](exec Exec[C, R], senders, maxBatch int) *Batcher[C, R] {
	return &Batcher[C, R]{exec: exec, senders: max(senders, 1), maxBatch: max(maxBatch, 1)}
}

func (b *Batcher[C, R]) get(ctx context.Context, cmd C) *Call[C, R] {
	c, _ := b.calls.Get().(*Call[C, R])
	if c == nil {
		c = &Call[C, R]{done: make(chan struct{}, 1)}
	}
	c.Cmd, c.ctx = cmd, ctx
	return c
}

// put recycles c, which nothing else refers to any more.
func (b *Batcher[C, R]) put(c *Call[C, R]) {
	done := c.done
	*c = Call[C, R]{done: done}
	b.calls.Put(c)
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
	if b.active < b.senders && len(b.queue) == 0 {
		b.active++
		b.mu.Unlock()
		c.self[0] = c
		b.exec(ctx, c.self[:])
		b.release()
		res, err := c.Res, c.Err
		b.put(c)
		return res, err
	}
	b.queue = append(b.queue, c)
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
			b.mu.Lock()
			i := slices.Index(b.queue, c)
			if i >= 0 {
				b.queue = slices.Delete(b.queue, i, i+1)
			}
			b.mu.Unlock()
			if i >= 0 {
				b.put(c) // never sent
			} // else c is in flight: its sender still writes to it
			return zero, ctx.Err()
		}
	}
	res, err := c.Res, c.Err
	b.put(c)
	return res, err
}

// release gives up a sender's turn, handing it to a new draining goroutine
// when commands wait.
func (b *Batcher[C, R]) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		go b.drain()
		return
	}
	b.active--
}

// drain sends the queued commands, batch after batch, until none is left.
func (b *Batcher[C, R]) drain() {
	var batch []*Call[C, R]
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.maxBatch)
		if n == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.send(batch)
		clear(batch)
	}
}

// send sends a batch taken from the queue and hands each call its result.
// Calls whose context ended while they waited are answered with its error
// and not sent.
func (b *Batcher[C, R]) send(batch []*Call[C, R]) {
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
		return
	}
	ctx, cancel := batchContext(live)
	b.exec(ctx, live)
	cancel()
	for _, c := range live {
		c.done <- struct{}{}
	}
}

// batchContext returns the context of a batch: the values of its first call's
// context, no cancellation (each caller watches its own), and the latest of
// the calls' deadlines, so that no call is cut short by another's; none if a
// call has none.
func batchContext[C, R any](calls []*Call[C, R]) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(calls[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), latest)
}
