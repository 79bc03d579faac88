package rueidiscore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/internal/tlsdial"
)

// Timeouts of the clients that Open creates. A call's context bounds it
// further; these bound the connection attempts that run in the background and
// the commands of a caller whose context has no deadline.
const (
	// dialTimeout bounds a TCP connect and, separately, the handshake (HELLO,
	// AUTH, SELECT) that follows it.
	dialTimeout = 5 * time.Second
	// connTimeout bounds the wait for a reply, and is how long an idle
	// connection may go without answering a PING before it is dropped.
	connTimeout = 5 * time.Second
	// probeTimeout is how long a server that did not answer a call by its
	// deadline has to answer a probe before its connection is broken (see
	// node.stalled).
	probeTimeout = 500 * time.Millisecond
)

// errRedial is what the dialer of a client made by Open answers when the
// library wants to reconnect in the goroutine of a call, where the wait would
// not be bounded by the call's context. The call then drops the client and
// waits for a new one as for the first (see node.dial and node.lost).
var errRedial = errors.New("connection lost")

// errCrossSlot is the error of a command for a cluster whose lock key and
// fencing counter are in different hash slots (driver.FenceKey never makes
// such a pair).
var errCrossSlot = errors.New("CROSSSLOT the fencing counter is not in the lock key's hash slot (see driver.FenceKey)")

// Open returns a node of lib for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS (see redisaddr.ParseTLS), or a Redis Cluster's
// "redis://host:port?cluster=true&addr=host:port..." (see
// redisaddr.ParseNode), with TLS over a copy of base when base is set. It
// does not connect: the node creates its client on first use, and
// again on the next use after an attempt failed. The node owns its client and
// closes it on Close.
func Open[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], addr string, base *tls.Config) (driver.Node, error) {
	lib.init()
	a, tlsConfig, err := redisaddr.ParseNodeTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lib.Name, err)
	}
	closing, cancel := context.WithCancel(context.Background())
	n := &node[C, D, R, L]{Name: drivernode.Name(a.String()), lib: lib, owned: true, closing: closing, cancel: cancel, cluster: a.Cluster}
	n.opt = Options{
		Cluster:          a.Cluster,
		InitAddress:      a.Seeds,
		Username:         a.Username,
		Password:         a.Password,
		SelectDB:         a.DB,
		Dialer:           net.Dialer{Timeout: dialTimeout},
		TLSConfig:        tlsConfig,
		ConnWriteTimeout: connTimeout,
	}
	n.startPubSub()
	return n, nil
}

// New returns a node of lib over c, a client the caller configured and keeps
// owning: Close on the node does not close c, but calls on the node after
// Close fail. The node's String is the address c connects to, or "NAME-N" if
// c has several. If c is nil, every call on the node, and Close, return an
// error.
func New[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], c C) driver.Node {
	lib.init()
	if drivernode.IsNil(c) {
		n := &node[C, D, R, L]{Name: drivernode.Name(lib.Name), lib: lib}
		n.cur.Store(&state[C]{err: lib.nilErr})
		return n
	}
	n := &node[C, D, R, L]{Name: clientName(lib, c), lib: lib, cluster: lib.Cluster(c)}
	n.cur.Store(&state[C]{client: c})
	n.startPubSub()
	return n
}

// clientName names a node over c: by its address, so that redlock.New
// rejects two nodes on one server, or else "NAME-N".
func clientName[C Client[C, D], D Dedicated, R Result, L any](lib *Library[C, D, R, L], c C) drivernode.Name {
	if nodes := c.Nodes(); len(nodes) == 1 {
		for addr := range nodes {
			return drivernode.Name(redisaddr.Redact(addr))
		}
	}
	return lib.unnamed.Next()
}

// state is what a node's calls use: its client, or else the error they
// return.
type state[C any] struct {
	client C
	err    error
	conns  []net.Conn // the connections client's creation dialed (Open's nodes; see stalled)
	// probing is set while a probe runs after a call to client timed out
	// (see stalled).
	probing atomic.Bool
}

// closed reports whether s is the state of a closed node.
func (s *state[C]) closed() bool { return errors.Is(s.err, driver.ErrClosed) }

// attempt is one creation of a client, shared by the callers that wait for it.
type attempt[C any] struct {
	done   chan struct{} // closed when client and err are set
	client C
	err    error

	// Guarded by node.mu.
	created bool          // NewClient returned: the client may dial no more
	stops   []func() bool // deregister the close-on-Close hooks of its connections
	conns   []net.Conn    // the connections dialed
}

// node is a driver.Node over a client of lib. Its command methods send the
// commands of package rediscmd through do. Its String and Format (from
// drivernode.Name) show its address without credentials.
type node[C Client[C, D], D Dedicated, R Result, L any] struct {
	drivernode.Name
	lib   *Library[C, D, R, L]
	owned bool // created by Open: the node creates and closes its client

	// cur is nil while there is no client (Open: before the first one is
	// created, and after one lost its connection), then its state; Close
	// sets it to a state whose err is driver.ErrClosed, New(nil) to one
	// whose err is lib.nilErr. Calls read it with one atomic load.
	cur atomic.Pointer[state[C]]

	// For nodes made by Open.
	opt     Options
	closing context.Context // done once Close is called
	cancel  context.CancelFunc

	cluster bool           // the client is a cluster client
	hub     *pubsub.Hub    // the release subscriptions of one server
	router  *pubsub.Router // those of a cluster (see optional.go)
	slots   slotMap        // a cluster's slots, for router

	mu         sync.Mutex
	pending    *attempt[C] // the client being created, if any
	dedicating int         // Dedicate calls in progress, which may dial (see dial)

}

// client returns the node's client, creating it first if need be.
func (n *node[C, D, R, L]) client(ctx context.Context) (C, error) {
	if s := n.cur.Load(); s != nil {
		return s.client, s.err
	}
	return n.connect(ctx)
}

// connect waits, as long as ctx allows, for the client being created, and
// starts creating it if no one is.
func (n *node[C, D, R, L]) connect(ctx context.Context) (C, error) {
	var none C
	if err := ctx.Err(); err != nil {
		return none, err
	}
	n.mu.Lock()
	if s := n.cur.Load(); s != nil {
		n.mu.Unlock()
		return s.client, s.err
	}
	a := n.pending
	if a == nil {
		a = &attempt[C]{done: make(chan struct{})}
		n.pending = a
		go n.create(a)
	}
	n.mu.Unlock()
	select {
	case <-a.done:
		return a.client, a.err
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

// create creates the client for a, and makes it the node's client unless the
// node was closed meanwhile, in which case it closes it.
func (n *node[C, D, R, L]) create(a *attempt[C]) {
	var none C
	opt := n.opt
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
		return n.dial(ctx, a, addr, d, tc)
	}
	c, err := n.lib.NewClient(opt)
	if err == nil && n.cluster {
		err = n.warm(c)
	}
	if err != nil && c != none {
		c.Close() // ForceSingleClient returns a client even when it failed to connect
		c = none
	}
	n.mu.Lock()
	n.pending = nil
	a.created = true
	stops := a.stops
	a.stops = nil
	s := n.cur.Load()
	closed := s != nil && s.closed()
	if err == nil && !closed {
		n.cur.Store(&state[C]{client: c, conns: a.conns})
	}
	n.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	switch {
	case closed:
		if c != none {
			c.Close()
		}
		c, err = none, driver.ErrClosed
	case err != nil:
		err = fmt.Errorf("%s: connect: %w", n.lib.Name, err)
	}
	a.client, a.err = c, err
	close(a.done)
}

// warm connects the client of a cluster to every node it knows, while it is
// being created and may dial (see dial): the library dials a node on its
// first command, which would otherwise be a call's.
func (n *node[C, D, R, L]) warm(c C) error {
	ctx, cancel := context.WithTimeout(n.closing, dialTimeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for addr, nc := range c.Nodes() {
		wg.Go(func() {
			if _, err := n.lib.Do(ctx, nc, "PING").ToAny(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", redisaddr.Redact(addr), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// dial connects to addr for the client that a creates, while NewClient runs,
// with TLS when tc is not nil. Close aborts the connect and the TLS
// handshake, and closes the connection, so that a creation stalled in its
// handshake ends when the node is closed.
//
// Once the client is created, dial refuses with errRedial: the library would
// reconnect and handshake in the goroutine of a call, and concurrent calls
// would wait for it beyond their contexts. The call drops the client instead,
// and a new one is created in the background (see lost). The exception is the
// connection of the pub/sub hub, which the library dials in the hub's own
// goroutine, in Dedicate (with a context that has no Done channel, unlike a
// call's): see dedicate.
func (n *node[C, D, R, L]) dial(ctx context.Context, a *attempt[C], addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	n.mu.Lock()
	created := a.created
	dedicated := created && n.dedicating > 0 && ctx.Done() == nil
	n.mu.Unlock()
	if created && !dedicated {
		return nil, errRedial
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.closing, cancel)()
	var (
		conn net.Conn
		err  error
	)
	if tc != nil {
		conn, err = tlsdial.Dial(ctx, d, "tcp", addr, tc)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if dedicated {
		return pubsub.CloseOnDone(n.closing, conn), nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if a.created {
		conn.Close()
		return nil, errRedial
	}
	a.stops = append(a.stops, context.AfterFunc(n.closing, func() { conn.Close() }))
	a.conns = append(a.conns, conn)
	return conn, nil
}

// lost reports whether err says that c lost its connection and wanted to
// redial (see dial). The command was not sent. It drops c, so that the next
// call creates a new client, unless another call did.
func (n *node[C, D, R, L]) lost(c C, err error) bool {
	if err == nil || !errors.Is(err, errRedial) {
		return false
	}
	if s := n.cur.Load(); s != nil && s.client == c && n.cur.CompareAndSwap(s, nil) {
		c.Close()
	}
	return true
}

// stalled is called when a call to c, a client of Open's, got no reply by
// its deadline: no goroutine of a call may outlive the node timeout. The library waits for the reply of a
// call that gave up in a goroutine of its own, as long as the connection
// lives (its ConnWriteTimeout, seconds), while every goroutine of a call must
// end with its deadline, or a small margin after, whatever the server does.
// So the server is probed on the same connection, whose replies come in
// order: a release of the call's key (which the server's ACL lets the client
// touch) with the empty value, which no lock has, so that it deletes
// nothing. If it answers within
// probeTimeout, the late reply has come too; if not, the connection is
// broken, its waiting goroutines end at once, the next call finds the client
// lost and a new one is created (see dial and lost), and the calls still
// waiting on it fail, as they would on a server that does not answer. One
// probe runs at a time. A client of New's is the caller's: left alone.
func (n *node[C, D, R, L]) stalled(c C, key string) {
	s := n.cur.Load()
	if s == nil || s.client != c || len(s.conns) == 0 || !s.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.probing.Store(false)
		ctx, cancel := context.WithTimeout(n.closing, probeTimeout)
		defer cancel()
		cmd := rediscmd.Release(key, "")
		var keys Keys
		keys.a, keys.n = cmd.KeyArray()
		sc, _ := cmd.Script()
		_, err := n.lib.Exec(ctx, c, n.lib.scripts[sc.SHA1()], keys, cmd.Args()).ToAny()
		if err != nil && !n.lib.IsNil(err) && ctx.Err() != nil {
			for _, conn := range s.conns {
				conn.Close()
			}
		}
	}()
}

// Close closes the node, its pub/sub connection and, for a node made by Open,
// its client, including one still being created. Calls after Close return
// driver.ErrClosed. Close is idempotent. On a node from New(nil) it returns an
// error.
func (n *node[C, D, R, L]) Close() error {
	if s := n.cur.Load(); s != nil && s.err == n.lib.nilErr {
		return n.lib.nilErr
	}
	var none C
	n.mu.Lock()
	s := n.cur.Swap(&state[C]{err: driver.ErrClosed})
	n.mu.Unlock()
	n.pubSubClosing() // waiting Subscribes report ErrClosed, not the broken connection
	if n.cancel != nil {
		n.cancel() // before the hub's Close, which waits for its dial
	}
	n.pubSubClose()
	if s != nil && s.client != none && n.owned {
		s.client.Close()
	}
	return nil
}

// SetNX sends SET key value NX PX ttl.
func (n *node[C, D, R, L]) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.SetNX(key, value, ttl)))
}

// EvalRelease runs driver.ReleaseScript: DEL key if it holds value.
func (n *node[C, D, R, L]) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.Release(key, value)))
}

// Extend runs driver.ExtendScript: PEXPIRE key ttl if it holds value.
func (n *node[C, D, R, L]) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.Extend(key, value, ttl)))
}

// do sends cmd and reads its reply. An error matches ctx's when ctx is done,
// and names the command unless there was no client to send it.
func (n *node[C, D, R, L]) do(ctx context.Context, cmd rediscmd.Cmd) (rediscmd.Result, error) {
	cmd.Cluster = n.cluster
	if n.cluster && cmd.FenceKey != "" && driver.HashSlot(cmd.FenceKey) != driver.HashSlot(cmd.Key) {
		// The library panics on a command whose keys are in several slots.
		return rediscmd.Result{}, cmd.Failed(ctx, n.lib.Name, errCrossSlot)
	}
	for retry := true; ; retry = false {
		c, err := n.client(ctx)
		if err != nil {
			return rediscmd.Result{}, driver.ContextError(ctx, err)
		}
		var (
			reply  any
			status string
			isSet  = cmd.Op == rediscmd.OpSetNX
		)
		if res := n.send(ctx, c, &cmd); isSet {
			// SET NX answers OK or nil: read as a string, its reply is
			// not boxed as ToAny boxes it.
			status, err = res.ToString()
		} else {
			reply, err = res.ToAny()
		}
		if retry && n.lost(c, err) {
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			n.stalled(c, cmd.Key)
		}
		if _, ok := ctx.Deadline(); ok && errors.Is(err, net.ErrClosed) {
			// The connection was broken under the call because the
			// server did not answer (see stalled): the call ends as on
			// a server that does not answer, at its deadline.
			<-ctx.Done()
			err = errors.Join(ctx.Err(), err)
		}
		if n.lib.IsNil(err) {
			reply, err, isSet = nil, nil, false // SET NX: the key exists
		}
		var r rediscmd.Result
		switch {
		case err != nil:
		case isSet && status == "OK":
			r = rediscmd.Result{OK: true}
		case isSet:
			r, err = cmd.Parse(status)
		default:
			r, err = cmd.Parse(reply)
		}
		if err != nil {
			return rediscmd.Result{}, cmd.Failed(ctx, n.lib.Name, err)
		}
		return r, nil
	}
}

// send sends cmd on c: SET, or its script by EVALSHA, and by EVAL when the
// server answers NOSCRIPT.
func (n *node[C, D, R, L]) send(ctx context.Context, c C, cmd *rediscmd.Cmd) R {
	s, ok := cmd.Script()
	if !ok {
		return n.lib.Set(ctx, c, cmd.Key, cmd.Value, driver.Milliseconds(cmd.TTL))
	}
	var keys Keys
	keys.a, keys.n = cmd.KeyArray()
	return n.lib.Exec(ctx, c, n.lib.scripts[s.SHA1()], keys, cmd.Args())
}
