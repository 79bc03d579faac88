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
// connection stays in the pool for the next call when this one gave up. A
// call that finds one idle connection takes it, and has the next one made
// once its command is done, if the pool has none idle then (see refill):
// the spare is made by a command through the pool (a PING), whose pool Get
// takes an idle connection when there is one, as the call's does, and
// go-redis gives no public way to have a Get dial instead (MinIdleConns'
// connections are dialed in the background but run their handshake at
// their first Get, in the call's goroutine); made meanwhile, the spare
// could take the call's connection before the call did, which then dialed
// within its own deadline.
type warmer struct {
	client  *redis.Client
	closing context.Context // done once Close is called
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the connecting goroutine

	mu      sync.Mutex
	pending chan struct{} // closed when the connection being made is ready or failed; nil if none is

	// goOn, set by tests alone, is called by wait when the call goes on to
	// take the pool's one idle connection, before it returns.
	goOn func()
}

func newWarmer(c *redis.Client) *warmer {
	closing, cancel := context.WithCancel(context.Background())
	return &warmer{client: c, closing: closing, cancel: cancel}
}

// wait returns once the pool has an idle connection, or one being made
// ended (ready or failed), or ctx or caller is done, with its error then:
// ctx bounds the call (its network deadline, which may be shared by calls,
// see batch.ShareDeadlines), caller is the context of the call's caller,
// whose cancellation ends the wait too. It reports last when the pool has
// one idle connection, which the call is to take: the caller then calls
// refill once its command is done (or given up), so that a connection the
// call holds on to (a lane's) or loses (its reply late, its context done)
// is replaced before the next call needs it, and never by a spare that
// takes the call's own connection first.
func (w *warmer) wait(ctx, caller context.Context) (last bool, err error) {
	idle := w.client.PoolStats().IdleConns
	if idle > 1 {
		return false, nil
	}
	if idle == 1 {
		if w.goOn != nil {
			w.goOn()
		}
		return true, nil
	}
	ch := w.start()
	if ch == nil {
		return false, nil // closed: the command fails with the client's error
	}
	select {
	case <-ch:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-caller.Done():
		return false, caller.Err()
	}
}

// refill has a connection made in the background after a call that found
// the pool's one idle connection (see wait), if the pool has none idle
// now: the call's connection is held (by the node's lane, or by its
// command, which goes on after a call that gave up) or was removed. It
// does not wait for it.
func (w *warmer) refill() {
	if w.client.PoolStats().IdleConns == 0 {
		w.start()
	}
}

// start has a connection made in the background unless one is being made
// already or Close was called, and returns the channel closed once the
// one being made is ready or failed; nil once Close was called and none is
// being made.
func (w *warmer) start() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == nil && w.closing.Err() == nil {
		w.pending = make(chan struct{})
		w.wg.Add(1)
		go w.connect(w.pending)
	}
	return w.pending
}

// connect has the pool make a connection and run its handshake, bounded by
// the dial timeout (and Close): a PING takes a connection from the pool,
// dialing it, and puts it back idle once answered. It sends none if the
// pool has an idle connection by then (one given back since start): that
// PING would take it instead of dialing, maybe before a call that found it
// idle (one given back between that look and the PING's Get can still be
// taken so; go-redis has no public Get that dials). If it fails, the
// command that waited dials as it would have without the warmer.
func (w *warmer) connect(ch chan struct{}) {
	defer w.wg.Done()
	ctx, cancel := context.WithTimeout(w.closing, dialTimeout)
	defer cancel()
	if w.client.PoolStats().IdleConns == 0 {
		w.client.Ping(ctx)
	}
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
// lane, and the one that the warmer wants idle beside it, which it would
// otherwise make only once that call is done (see refill), so that a call
// made meanwhile (while the first is on the lane, or several calls sent
// together) would wait for it within its own deadline.
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
