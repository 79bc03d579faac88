package goredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// warmer makes the connections of a client that Open built outside the
// calls' deadlines, so that a slow link costs a call one round trip. go-redis dials a connection and
// runs its handshake (HELLO: a round trip) in the goroutine of the command
// that needs it, bounded by that command's context: over a slow link, a node
// timeout of twice the round trip would then never be enough for a new
// connection, and a command that gave up leaves no connection behind, so
// that the next one starts again. Instead, a call that finds no idle
// connection in the pool has one made in the background, bounded by the dial
// timeout and ended by Close, and waits for it as long as its own context
// allows; the command then goes out on a ready connection, and the
// connection stays in the pool for the next call when this one gave up.
type warmer struct {
	client  *redis.Client
	closing context.Context // done once Close is called
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the connecting goroutine

	mu      sync.Mutex
	pending chan struct{} // closed when the connection being made is ready or failed; nil if none is
}

func newWarmer(c *redis.Client) *warmer {
	closing, cancel := context.WithCancel(context.Background())
	return &warmer{client: c, closing: closing, cancel: cancel}
}

// wait returns once the pool has an idle connection, or one being made
// ended (ready or failed), or ctx or caller is done, with its error then:
// ctx bounds the call (its network deadline, which may be shared by calls,
// see batch.ShareDeadlines), caller is the context of the call's caller,
// whose cancellation ends the wait too. When the
// call takes the last idle connection, the next one is made meanwhile, so
// that a connection that a call loses (its reply late, its context done) is
// replaced before the next call needs it.
func (w *warmer) wait(ctx, caller context.Context) error {
	idle := w.client.PoolStats().IdleConns
	if idle > 1 {
		return nil
	}
	w.mu.Lock()
	ch := w.pending
	if ch == nil && w.closing.Err() == nil {
		ch = make(chan struct{})
		w.pending = ch
		w.wg.Add(1)
		go w.connect(ch)
	}
	w.mu.Unlock()
	if ch == nil || idle > 0 {
		return nil // closed (the command fails with the client's error), or one left
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-caller.Done():
		return caller.Err()
	}
}

// connect has the pool make a connection and run its handshake, bounded by
// the dial timeout (and Close): a PING takes a connection from the pool,
// dialing it, and puts it back idle once answered. If it fails, the command
// that waited dials as it would have without the warmer.
func (w *warmer) connect(ch chan struct{}) {
	defer w.wg.Done()
	ctx, cancel := context.WithTimeout(w.closing, dialTimeout)
	defer cancel()
	w.client.Ping(ctx)
	w.mu.Lock()
	w.pending = nil
	w.mu.Unlock()
	close(ch)
}

// stop ends the connection being made, if any: it cancels its context, calls
// closeClient (which breaks its connection: go-redis bounds a read by the
// context's deadline, not by its cancellation) and waits for it to end. A
// nil warmer only closes the client.
func (w *warmer) stop(closeClient func() error) error {
	if w == nil { // a cluster client: no warmer
		return closeClient()
	}
	w.mu.Lock()
	w.cancel() // under mu: wait starts no connection after it
	w.mu.Unlock()
	err := closeClient()
	w.wg.Wait()
	return err
}
