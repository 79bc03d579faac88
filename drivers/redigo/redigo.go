package redigo

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/redlock"
)

func init() { redlock.Register("redigo", Driver{}) }

// Settings of the pools that Open builds.
const (
	// connectTimeout bounds a TCP connect when the call's context allows longer.
	connectTimeout = 5 * time.Second
	// maxIdle keeps a connection each for many concurrent lockers.
	maxIdle = 64
	// minMaxActive is the least number of connections a pool may have open
	// at once (see maxActive).
	minMaxActive = 64
	// idleTimeout closes connections unused for this long.
	idleTimeout = 4 * time.Minute
	// keepAlive is the TCP keep-alive period, redigo's default.
	keepAlive = 5 * time.Minute
)

// ErrClosed is [driver.ErrClosed], which calls on a node return after Close.
var ErrClosed = driver.ErrClosed

// errNilPool is what every call on a node from New(nil), and its Close,
// return.
var errNilPool = errors.New("redigo: New was given a nil pool")

// The scripts every node runs, by EVALSHA with a fallback to EVAL.
var (
	releaseScript       = redis.NewScript(1, driver.ReleaseScript.Source)
	extendScript        = redis.NewScript(1, driver.ExtendScript.Source)
	setNXFenceScript    = redis.NewScript(2, driver.SetNXFenceScript.Source)
	raiseFenceScript    = redis.NewScript(2, driver.RaiseFenceScript.Source)
	releaseNotifyScript = redis.NewScript(1, driver.ReleaseNotifyScript.Source)
)

// Driver opens redigo nodes by address. It is registered as "redigo".
type Driver struct{}

// Open returns a node for addr, "host:port",
// "redis://[user:password@]host:port[/db]" or the same with "rediss://" for
// TLS, whose query parameters tls_ca_file, tls_cert_file, tls_key_file and
// tls_server_name set the CAs to trust (default: the system's), a client
// certificate and its key, and the name to verify the server's certificate
// against (default: the host). The node has a connection pool of its own that
// its Close closes. It does not connect: the node dials on use, so Open fails
// only for a malformed address or TLS files it cannot load, and its error
// never contains the password.
func (Driver) Open(addr string) (driver.Node, error) { return open(addr, nil) }

// OpenConfig is Open with a driver.Config: with cfg.TLS set, the node
// connects with TLS whatever the address's scheme, with a copy of cfg.TLS on
// which a rediss:// address's tls_* parameters are applied. redlock.Open calls
// it for redlock.WithTLSConfig.
func (Driver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	return open(addr, cfg.TLS)
}

var _ driver.ConfigOpener = Driver{}

// maxActive bounds the connections a pool of Open's has open at once, as
// go-redis bounds its pool: a call whose context ends before its reply comes
// loses its connection (redigo closes it), so that a flood of short calls
// would otherwise dial without limit. A call waits for a connection as long
// as its context allows.
func maxActive() int { return max(minMaxActive, 10*runtime.GOMAXPROCS(0)) }

// open opens a node for addr, with TLS over a copy of base when base is set.
func open(addr string, base *tls.Config) (driver.Node, error) {
	a, tlsConfig, err := redisaddr.ParseTLS(addr, base)
	if err != nil {
		return nil, fmt.Errorf("redigo: %w", err)
	}
	opts := []redis.DialOption{
		redis.DialUsername(a.Username),
		redis.DialPassword(a.Password),
		redis.DialDatabase(a.DB),
		redis.DialConnectTimeout(connectTimeout),
	}
	if tlsConfig != nil {
		// redigo's own TLS handshake does not watch the context; this
		// dialer's does, so a stalled server holds no call beyond its
		// context (see package tlsdial).
		d := &net.Dialer{Timeout: connectTimeout, KeepAlive: keepAlive}
		opts = append(opts, redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			return tlsdial.Dial(ctx, d, network, addr, tlsConfig)
		}))
	}
	hostPort := a.HostPort()
	pool := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", hostPort, opts...)
		},
		MaxIdle:     maxIdle,
		MaxActive:   maxActive(),
		Wait:        true, // for a connection, as long as the call's context allows
		IdleTimeout: idleTimeout,
	}
	return newNode(pool, a.String(), true), nil
}

// New returns a node over a pool the caller configured; its DialContext (or
// Dial) decides the server, credentials and database. The caller keeps the
// pool: the node's Close does not close it, but calls on the node fail after
// Close. The pool's connections must support contexts (redis.ConnWithContext),
// as those of redis.DialContext do. If p is nil, every call on the node, and
// Close, return an error.
//
// The node's String is "redigo(0x...)", naming the pool by its address, so
// that redlock.New tells nodes over different pools apart and refuses two nodes
// over the same pool.
//
// Release notifications (driver.Notifier's Subscribe) use one connection of
// the node's own, made with the pool's DialContext (or Dial) and never put in
// the pool.
func New(p *redis.Pool) driver.Node {
	return newNode(p, fmt.Sprintf("redigo(%p)", p), false)
}

func newNode(p *redis.Pool, name string, ownsPool bool) *node {
	n := &node{pool: p, name: name, ownsPool: ownsPool}
	if p != nil {
		n.hub = pubsub.New(n.dialPubSub)
	}
	return n
}

// node is a driver.Node over a redigo pool.
type node struct {
	pool     *redis.Pool // nil for New(nil)
	name     string
	ownsPool bool
	hub      *pubsub.Hub // the release subscriptions; nil for New(nil)
	closed   atomic.Bool
	// getting is held (read) around pool.GetContext and (write) by Close:
	// redigo's Pool.Close races with a GetContext waiting for a connection
	// (Wait is set), closing the channel that GetContext sends on.
	getting sync.RWMutex
}

// String returns the node's address with any password removed.
func (n *node) String() string { return n.name }

// Format writes String whatever the verb, so that no verb (%#v, %d, ...)
// prints the node's fields, which hold the password.
func (n *node) Format(f fmt.State, _ rune) { io.WriteString(f, n.name) }

// SetNX sets key to value with the given TTL if key does not exist:
// SET key value NX PX ms.
func (n *node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, func(c redis.Conn) (any, error) {
		return redis.DoContext(c, ctx, "SET", key, value, "NX", "PX", driver.Milliseconds(ttl))
	}, func(reply any) (bool, bool) {
		switch reply {
		case nil:
			return false, true
		case "OK":
			return true, true
		}
		return false, false
	})
}

// EvalRelease deletes key if it holds value, by driver.ReleaseScript.
func (n *node) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.do(ctx, func(c redis.Conn) (any, error) {
		return releaseScript.DoContext(ctx, c, key, value)
	}, intBool)
}

// Extend sets key's TTL if key holds value, by driver.ExtendScript.
func (n *node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.do(ctx, func(c redis.Conn) (any, error) {
		return extendScript.DoContext(ctx, c, key, value, driver.Milliseconds(ttl))
	}, intBool)
}

// Close makes later calls fail with ErrClosed, closes the node's pub/sub
// connection, and closes the pool if Open made it. Closing twice does nothing.
// On a node from New(nil) it returns an error.
func (n *node) Close() error {
	if n.pool == nil {
		return errNilPool
	}
	n.getting.Lock()
	already := n.closed.Swap(true)
	n.getting.Unlock()
	if already {
		return nil
	}
	n.hub.Close()
	if !n.ownsPool {
		return nil
	}
	return n.pool.Close()
}

// intBool reads the 1 or 0 that the scripts return.
func intBool(reply any) (result, ok bool) {
	switch reply {
	case int64(1):
		return true, true
	case int64(0):
		return false, true
	}
	return false, false
}

// do runs cmd on a connection from the pool and reads its reply with result,
// which reports false for a reply it does not expect.
func (n *node) do(ctx context.Context, cmd func(redis.Conn) (any, error), result func(any) (bool, bool)) (bool, error) {
	reply, err := n.run(ctx, cmd)
	if err != nil {
		return false, err
	}
	ok, known := result(reply)
	if !known {
		return false, fmt.Errorf("redigo: unexpected reply of type %T", reply)
	}
	return ok, nil
}

// run runs cmd on a connection from the pool and returns its reply. Its
// errors match ctx.Err() when ctx is done: redigo bounds a read by a socket
// deadline equal to ctx's, which can fire before ctx itself reports
// DeadlineExceeded.
func (n *node) run(ctx context.Context, cmd func(redis.Conn) (any, error)) (any, error) {
	if err := n.usable(); err != nil {
		return nil, err
	}
	reply, err := n.exec(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("redigo: %w", driver.ContextError(ctx, err))
	}
	return reply, nil
}

// usable returns the error of a call on a node without a pool or closed.
func (n *node) usable() error {
	switch {
	case n.pool == nil:
		return errNilPool
	case n.closed.Load():
		return ErrClosed
	}
	return nil
}

// exec runs cmd on a connection from the pool.
func (n *node) exec(ctx context.Context, cmd func(redis.Conn) (any, error)) (any, error) {
	// Neither GetContext (with an idle connection) nor DoContext checks a
	// context that is already done before they send the command.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.getting.RLock()
	if n.closed.Load() {
		n.getting.RUnlock()
		return nil, ErrClosed
	}
	c, err := n.pool.GetContext(ctx)
	n.getting.RUnlock()
	if err != nil {
		return nil, err
	}
	// A connection whose command was cut short by ctx has its error set
	// (redigo closes it at once), so Close discards it instead of pooling it.
	defer c.Close()
	return cmd(c)
}
