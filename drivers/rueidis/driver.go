package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("rueidis", Driver{}) }

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
)

// luaScripts holds the scripts every node runs, by their SHA1 digest. Their
// Exec sends EVALSHA and falls back to EVAL when the server answers NOSCRIPT.
var luaScripts = func() map[string]*rueidis.Lua {
	m := make(map[string]*rueidis.Lua)
	for _, s := range []driver.Script{
		driver.ReleaseScript(), driver.ExtendScript(), driver.SetNXFenceScript(),
		driver.RaiseFenceScript(), driver.ReleaseNotifyScript(), driver.TTLScript(),
	} {
		m[s.SHA1()] = rueidis.NewLuaScript(s.Source())
	}
	return m
}()

// errNilClient is what every call on a node from New(nil), and its Close,
// return.
var errNilClient = drivernode.NilClientError("rueidis", "client")

// errRedial is what the dialer of a client made by Open answers when rueidis
// wants to reconnect in the goroutine of a call, where the wait would not be
// bounded by the call's context. The call then drops the client and waits for
// a new one as for the first (see node.dial and node.lost).
var errRedial = errors.New("rueidis: connection lost")

// Driver opens rueidis nodes by address. It is registered as "rueidis".
type Driver struct{}

var _ driver.Driver = Driver{}

// Open returns a node for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS, whose query parameters tls_ca_file, tls_cert_file, tls_key_file and
// tls_server_name set the CAs to trust (default: the system's), a client
// certificate and its key, and the name to verify the server's certificate
// against (default: the host). It does not connect: the node creates its
// rueidis client on first use, and again on the next use after an attempt
// failed. Open fails only for a malformed address or TLS files it cannot load,
// and its error never contains the password. The node owns its client and
// closes it on Close.
func (Driver) Open(addr string) (driver.Node, error) { return open(addr, nil) }

// OpenConfig is Open with a driver.Config: with cfg.TLS set, the node
// connects with TLS whatever the address's scheme, with a copy of cfg.TLS on
// which a rediss:// address's tls_* parameters are applied. redlock.Open calls
// it for redlock.WithTLSConfig.
func (Driver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	return open(addr, cfg.TLS)
}

var _ driver.ConfigOpener = Driver{}

// open opens a node for addr, with TLS over a copy of base when base is set.
func open(addr string, base *tls.Config) (driver.Node, error) {
	a, tlsConfig, err := redisaddr.ParseTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("rueidis: %w", err)
	}
	closing, cancel := context.WithCancel(context.Background())
	n := &node{Name: drivernode.Name(a.String()), owned: true, closing: closing, cancel: cancel}
	n.opt = rueidis.ClientOption{
		InitAddress:       []string{a.HostPort()},
		Username:          a.Username,
		Password:          a.Password,
		SelectDB:          a.DB,
		ForceSingleClient: true, // one master: no CLUSTER probe
		DisableCache:      true, // no client-side caching, no CLIENT TRACKING
		DisableRetry:      true, // a retried SET NX could turn "applied" into "held by another"
		// Every command goes through the pipeline, whose callers wait with a
		// select on ctx.Done(): without it a lone caller with a deadline does
		// synchronous I/O that a cancellation does not interrupt.
		AlwaysPipelining: true,
		// One connection, made while the client is created. rueidis would
		// dial further ones in the goroutine of a call, unbounded by its
		// context (see dial).
		PipelineMultiplex: -1,
		Dialer:            net.Dialer{Timeout: dialTimeout},
		TLSConfig:         tlsConfig, // for dial, which does the handshake
		ConnWriteTimeout:  connTimeout,
	}
	n.hub = pubsub.New(n.dialPubSub)
	return n, nil
}

// New returns a node over c, a client the caller configured, for one
// independent Redis master. The caller keeps ownership: Close on the node does
// not close c, but calls on the node after Close fail. The node's String is
// the address c connects to, or "rueidis-N" if c has several.
//
// Configure c with DisableRetry, so that a command whose reply was lost is
// reported as an error rather than retried, and prefer ForceSingleClient and
// DisableCache. If c is nil, every call on the node, and Close, return an
// error.
func New(c rueidis.Client) driver.Node {
	if drivernode.IsNil(c) {
		n := &node{Name: "rueidis"}
		n.cur.Store(nilClientState)
		return n
	}
	n := &node{Name: clientName(c)}
	n.cur.Store(&state{client: c})
	n.hub = pubsub.New(n.dialPubSub)
	return n
}

// unnamed names the nodes New made over clients of several servers.
var unnamed = drivernode.NewCounter("rueidis")

// clientName names a node over c: by its address, so that redlock.New
// rejects two nodes on one server, or else "rueidis-N".
func clientName(c rueidis.Client) drivernode.Name {
	if nodes := c.Nodes(); len(nodes) == 1 {
		for addr := range nodes {
			return drivernode.Name(redisaddr.Redact(addr))
		}
	}
	return unnamed.Next()
}

// state is what a node's calls use: its client, or else the error they
// return.
type state struct {
	client rueidis.Client
	err    error
}

// The states of every closed node, and of every node from New(nil).
var (
	closedState    = &state{err: driver.ErrClosed}
	nilClientState = &state{err: errNilClient}
)

// attempt is one creation of a client, shared by the callers that wait for it.
type attempt struct {
	done   chan struct{} // closed when client and err are set
	client rueidis.Client
	err    error

	// Guarded by node.mu.
	created bool          // NewClient returned: the client may dial no more
	stops   []func() bool // deregister the close-on-Close hooks of its connections
}

// node is a driver.Node over a rueidis client. Its command methods send the
// commands of package rediscmd through do. Its String and Format (from
// drivernode.Name) show its address without credentials.
type node struct {
	drivernode.Name
	owned bool // created by Open: the node creates and closes its client

	// cur is nil while there is no client (Open: before the first one is
	// created, and after one lost its connection), then its state; Close sets
	// it to closedState, New(nil) to nilClientState. Calls read it with one
	// atomic load.
	cur atomic.Pointer[state]

	// For nodes made by Open.
	opt     rueidis.ClientOption
	closing context.Context // done once Close is called
	cancel  context.CancelFunc

	hub *pubsub.Hub // the release subscriptions; nil for New(nil)

	mu         sync.Mutex
	pending    *attempt // the client being created, if any
	dedicating int      // Dedicate calls in progress, which may dial (see dial)
}

var _ driver.Node = (*node)(nil)

// client returns the node's client, creating it first if need be.
func (n *node) client(ctx context.Context) (rueidis.Client, error) {
	if s := n.cur.Load(); s != nil {
		return s.client, s.err
	}
	return n.connect(ctx)
}

// connect waits, as long as ctx allows, for the client being created, and
// starts creating it if no one is.
func (n *node) connect(ctx context.Context) (rueidis.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	if s := n.cur.Load(); s != nil {
		n.mu.Unlock()
		return s.client, s.err
	}
	a := n.pending
	if a == nil {
		a = &attempt{done: make(chan struct{})}
		n.pending = a
		go n.create(a)
	}
	n.mu.Unlock()
	select {
	case <-a.done:
		return a.client, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// create creates the client for a, and makes it the node's client unless the
// node was closed meanwhile, in which case it closes it.
func (n *node) create(a *attempt) {
	opt := n.opt
	opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
		return n.dial(ctx, a, addr, d, tc)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil && c != nil {
		c.Close() // ForceSingleClient returns a client even when it failed to connect
		c = nil
	}
	n.mu.Lock()
	n.pending = nil
	a.created = true
	stops := a.stops
	a.stops = nil
	closed := n.cur.Load() == closedState
	if err == nil && !closed {
		n.cur.Store(&state{client: c})
	}
	n.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	switch {
	case closed:
		if c != nil {
			c.Close()
		}
		c, err = nil, driver.ErrClosed
	case err != nil:
		err = fmt.Errorf("rueidis: connect: %w", err)
	}
	a.client, a.err = c, err
	close(a.done)
}

// dial connects to addr for the client that a creates, while NewClient runs,
// with TLS when tc is not nil. Close aborts the connect and the TLS
// handshake, and closes the connection, so that a creation stalled in its
// handshake ends when the node is closed.
//
// Once the client is created, dial refuses with errRedial: rueidis would
// reconnect and handshake in the goroutine of a call, and concurrent calls
// would wait for it beyond their contexts. The call drops the client instead,
// and a new one is created in the background (see lost). The exception is the
// connection of the pub/sub hub, which rueidis dials in the hub's own
// goroutine, in Dedicate (with a context that has no Done channel, unlike a
// call's): see dedicate.
func (n *node) dial(ctx context.Context, a *attempt, addr string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
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
	return conn, nil
}

// lost reports whether err says that c lost its connection and wanted to
// redial (see dial). The command was not sent. It drops c, so that the next
// call creates a new client, unless another call did.
func (n *node) lost(c rueidis.Client, err error) bool {
	if err == nil || !errors.Is(err, errRedial) {
		return false
	}
	if s := n.cur.Load(); s != nil && s.client == c && n.cur.CompareAndSwap(s, nil) {
		c.Close()
	}
	return true
}

// Close closes the node, its pub/sub connection and, for a node made by Open,
// its client, including one still being created. Calls after Close return
// driver.ErrClosed. Close is idempotent. On a node from New(nil) it returns an
// error.
func (n *node) Close() error {
	if n.cur.Load() == nilClientState {
		return errNilClient
	}
	n.mu.Lock()
	s := n.cur.Swap(closedState)
	n.mu.Unlock()
	n.hub.Closing() // waiting Subscribes report ErrClosed, not the broken connection
	if n.cancel != nil {
		n.cancel() // before the hub's Close, which waits for its dial
	}
	n.hub.Close()
	if s != nil && s.client != nil && n.owned {
		s.client.Close()
	}
	return nil
}

// SetNX sends SET key value NX PX ttl.
func (n *node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.SetNX(key, value, ttl)))
}

// EvalRelease runs driver.ReleaseScript: DEL key if it holds value.
func (n *node) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.Release(key, value)))
}

// Extend runs driver.ExtendScript: PEXPIRE key ttl if it holds value.
func (n *node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.Extend(key, value, ttl)))
}

// do sends cmd and reads its reply. An error matches ctx's when ctx is done,
// and names the command unless there was no client to send it.
func (n *node) do(ctx context.Context, cmd rediscmd.Cmd) (rediscmd.Result, error) {
	for retry := true; ; retry = false {
		c, err := n.client(ctx)
		if err != nil {
			return rediscmd.Result{}, driver.ContextError(ctx, err)
		}
		reply, err := send(ctx, c, &cmd).ToAny()
		if retry && n.lost(c, err) {
			continue
		}
		if rueidis.IsRedisNil(err) {
			reply, err = nil, nil // SET NX: the key exists
		}
		var r rediscmd.Result
		if err == nil {
			r, err = cmd.Parse(reply)
		}
		if err != nil {
			return rediscmd.Result{}, cmd.Failed(ctx, "rueidis", err)
		}
		return r, nil
	}
}

// send sends cmd on c: SET, or its script by EVALSHA, and by EVAL when the
// server answers NOSCRIPT.
func send(ctx context.Context, c rueidis.Client, cmd *rediscmd.Cmd) rueidis.RedisResult {
	s, ok := cmd.Script()
	if !ok {
		return c.Do(ctx, c.B().Set().Key(cmd.Key).Value(cmd.Value).Nx().PxMilliseconds(driver.Milliseconds(cmd.TTL)).Build())
	}
	return luaScripts[s.SHA1()].Exec(ctx, c, cmd.Keys(), cmd.Args())
}
