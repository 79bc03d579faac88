package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
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

// The scripts every node runs. Exec sends EVALSHA and falls back to EVAL when
// the server answers NOSCRIPT.
var (
	releaseScript       = rueidis.NewLuaScript(driver.ReleaseScript.Source)
	extendScript        = rueidis.NewLuaScript(driver.ExtendScript.Source)
	setNXFenceScript    = rueidis.NewLuaScript(driver.SetNXFenceScript.Source)
	raiseFenceScript    = rueidis.NewLuaScript(driver.RaiseFenceScript.Source)
	releaseNotifyScript = rueidis.NewLuaScript(driver.ReleaseNotifyScript.Source)
)

// ErrClosed is [driver.ErrClosed], which calls on a node return after Close.
var ErrClosed = driver.ErrClosed

// errNilClient is what every call on a node from New(nil), and its Close,
// return.
var errNilClient = errors.New("rueidis: New was given a nil client")

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
	n := &node{name: a.String(), owned: true, closing: closing, cancel: cancel}
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
	if isNil(c) {
		n := &node{name: "rueidis"}
		n.cur.Store(nilClientState)
		return n
	}
	n := &node{name: clientName(c)}
	n.cur.Store(&state{client: c})
	n.hub = pubsub.New(n.dialPubSub)
	return n
}

// isNil reports whether c is nil or a nil pointer.
func isNil(c any) bool {
	v := reflect.ValueOf(c)
	return !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil()
}

// wrapped counts the clients New wrapped, to name them.
var wrapped atomic.Int64

// clientName names a node over c: by its address, so that redlock.New
// rejects two nodes on one server, or else "rueidis-N".
func clientName(c rueidis.Client) string {
	if nodes := c.Nodes(); len(nodes) == 1 {
		for addr := range nodes {
			return redisaddr.Redact(addr)
		}
	}
	return "rueidis-" + strconv.FormatInt(wrapped.Add(1), 10)
}

// state is what a node's calls use: its client, or else the error they
// return.
type state struct {
	client rueidis.Client
	err    error
}

// The states of every closed node, and of every node from New(nil).
var (
	closedState    = &state{err: ErrClosed}
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

// node is a driver.Node over a rueidis client.
type node struct {
	name  string
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

// String returns the node's address with any password removed; for a node
// made by New, the address of its client (see New).
func (n *node) String() string { return n.name }

// Format writes String whatever the verb, so that no verb (%#v, %d, ...)
// prints the node's fields, which hold the password.
func (n *node) Format(f fmt.State, _ rune) { io.WriteString(f, n.name) }

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
		c, err = nil, ErrClosed
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
// ErrClosed. Close is idempotent. On a node from New(nil) it returns an
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
	var (
		reply string
		err   error
	)
	for retry := true; ; retry = false {
		var c rueidis.Client
		if c, err = n.client(ctx); err != nil {
			return false, driver.ContextError(ctx, err)
		}
		cmd := c.B().Set().Key(key).Value(value).Nx().PxMilliseconds(driver.Milliseconds(ttl)).Build()
		if reply, err = c.Do(ctx, cmd).ToString(); !retry || !n.lost(c, err) {
			break
		}
	}
	switch {
	case err == nil && reply == "OK":
		return true, nil
	case rueidis.IsRedisNil(err):
		return false, nil // NX: the key exists
	case err == nil:
		err = fmt.Errorf("unexpected reply %.40q", reply)
	}
	return false, driver.ContextError(ctx, fmt.Errorf("rueidis: SET: %w", err))
}

// EvalRelease runs driver.ReleaseScript.
func (n *node) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.eval(ctx, "release", releaseScript, []string{key}, []string{value})
}

// Extend runs driver.ExtendScript.
func (n *node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.eval(ctx, "extend", extendScript, []string{key}, []string{value, driver.MillisecondsString(ttl)})
}

// eval runs one of the scripts, which answer 1 (done) or 0 (not held).
func (n *node) eval(ctx context.Context, name string, script *rueidis.Lua, keys, args []string) (bool, error) {
	msg, err := n.exec(ctx, name, script, keys, args)
	if err != nil {
		return false, err
	}
	v, err := msg.AsInt64()
	switch {
	case err != nil:
	case v == 1:
		return true, nil
	case v == 0:
		return false, nil
	default:
		err = fmt.Errorf("unexpected reply %d", v)
	}
	return false, driver.ContextError(ctx, fmt.Errorf("rueidis: %s script: %w", name, err))
}

// exec runs a script and returns its reply. An error matches ctx's when ctx
// is done, and names the script unless there was no client to run it.
func (n *node) exec(ctx context.Context, name string, script *rueidis.Lua, keys, args []string) (rueidis.RedisMessage, error) {
	for retry := true; ; retry = false {
		c, err := n.client(ctx)
		if err != nil {
			return rueidis.RedisMessage{}, driver.ContextError(ctx, err)
		}
		msg, err := script.Exec(ctx, c, keys, args).ToMessage()
		if retry && n.lost(c, err) {
			continue
		}
		if err != nil {
			return rueidis.RedisMessage{}, driver.ContextError(ctx, fmt.Errorf("rueidis: %s script: %w", name, err))
		}
		return msg, nil
	}
}
