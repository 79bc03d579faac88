package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/untildone"
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

// warmConns is how many connections Warm leaves idle in the pool of a node
// from Open: the one that the first call sent alone takes for the node's
// lane, and the one that the warmer wants idle beside it (see wait), which
// it would otherwise start to make at that call, in the background with a
// PING that can take the pool's last idle connection before the call does,
// so that the call dials within its own deadline.
const warmConns = 2

var _ drivernode.Warmer = (*node)(nil)

// Warm leaves warmConns connections made and idle in the pool of a node
// from Open (see drivernode.Warmer), so that its first calls after
// redlock.Client.Connect take ready connections: it holds that many at once
// and sends a PING on each (a reply, an error reply included, means the
// connection is made), reusing those the pool has idle and dialing the
// others, then gives them back to the pool. A pool that has that many idle
// already costs nothing. It returns at ctx's end (the connections then go
// on being made in the background, bounded by the dial and read timeouts
// and by Close). A node over a client of the caller's (New) or a cluster
// has no lane and no warmer, and Warm does nothing there.
func (n *node) Warm(ctx context.Context) error {
	if err := n.state.Err(); err != nil {
		return err
	}
	c := n.lanes.client
	if n.warm == nil || c == nil || c.PoolStats().IdleConns >= warmConns {
		return nil
	}
	_, err := untildone.Do(ctx, func() (struct{}, error) {
		var (
			conns [warmConns]*redis.Conn
			errs  [warmConns]error
			wg    sync.WaitGroup
		)
		for i := range conns {
			conns[i] = c.Conn() // each holds a connection of its own from its PING on
			wg.Go(func() { errs[i] = conns[i].Ping(ctx).Err() })
		}
		wg.Wait()
		for _, cn := range conns {
			_ = cn.Close() // back to the pool, idle; a broken one is removed
		}
		return struct{}{}, errors.Join(errs[:]...)
	}, nil)
	if err != nil {
		return fmt.Errorf("goredis: warm: %w", driver.ContextError(ctx, err))
	}
	return nil
}
