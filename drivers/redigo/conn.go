package redigo

import (
	"context"
	"errors"
	"math"
	"net"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/internal/connalive"
)

// idleCheck is how long a pooled connection of Open's may stay unused before
// the pool checks, when it hands it out, that the server has not closed it
// (a restart, CLIENT KILL, its timeout): long enough that calls in a row pay
// nothing, short enough that a connection closed while the node was idle
// does not fail the next call. The check reads the socket without blocking,
// with no round trip (package connalive). A connection used within
// idleCheck is checked too once a call of the node failed on a connection
// that had answered before (see stale): the server may have closed all of
// them at once, and the pool must not hand out the others unchecked.
const idleCheck = time.Second

// errIdleClosed is the pool's verdict on an idle connection that the server
// closed: the pool drops it and takes another, or dials.
var errIdleClosed = errors.New("redigo: the server closed the idle connection")

// idleChecker is the pool's TestOnBorrow for Open (see check).
type idleChecker struct {
	base time.Time // monotonic origin of failed
	// failed is when (since base) a call last failed with a connection
	// error on a connection that had answered before; math.MinInt64 if
	// none did.
	failed atomic.Int64
}

func newIdleChecker() *idleChecker {
	ic := &idleChecker{base: time.Now()}
	ic.failed.Store(math.MinInt64)
	return ic
}

// sawStale records that a connection the server had answered before failed
// now: every connection put back in the pool until now is checked when it
// is handed out.
func (ic *idleChecker) sawStale() { ic.failed.Store(int64(time.Since(ic.base))) }

// check is the pool's TestOnBorrow: a connection is handed out only if the
// server has not closed it, checked when it was unused for idleCheck or more
// or was put back before a call failed on a stale connection (sawStale).
// The hot path, a connection used just now with no failure since, costs a
// clock reading and an atomic load, no system call.
func (ic *idleChecker) check(c redis.Conn, used time.Time) error {
	if time.Since(used) < idleCheck && int64(used.Sub(ic.base)) > ic.failed.Load() {
		return nil
	}
	if cc, ok := c.(*conn); ok && cc.raw != nil && !connalive.Alive(cc.raw) {
		return errIdleClosed
	}
	return nil
}

// staleError is the error of a command that failed with a connection error
// (the server closed the connection or reset it: EOF, ECONNRESET, EPIPE;
// not a timeout, not an error reply) on a connection that had answered
// earlier commands: most likely the server closed it while it was idle in
// the pool (a restart, CLIENT KILL), and the command can go again on another
// connection (see node.exec).
type staleError struct{ err error }

func (e *staleError) Error() string { return e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// isStale reports whether err is a staleError.
func isStale(err error) bool {
	var se *staleError
	return errors.As(err, &se)
}

// conn is a connection of Open's pools, with its network connection, which
// the pool's check reads (see idleCheck). It has the contexts and timeouts
// of the connection it wraps, which the node's calls need.
//
// Its replies are counted: a connection error on a connection that had
// answered before is returned as a staleError.
type conn struct {
	redis.Conn
	raw net.Conn
	// answered: the server answered a command on it (replies read). A
	// pub/sub connection's sender (Flush) reads it while its receiver sets it.
	answered atomic.Bool
}

// result returns reply and err, err as a staleError when it is a
// connection error on a connection that had answered before, and records
// whether the server answered.
func (c *conn) result(reply any, err error) (any, error) {
	var serverErr redis.Error
	switch {
	case err == nil || errors.As(err, &serverErr):
		c.answered.Store(true)
	case c.answered.Load() && connalive.Broken(err):
		err = &staleError{err}
	}
	return reply, err
}

func (c *conn) Do(cmd string, args ...any) (any, error) {
	return c.result(c.Conn.Do(cmd, args...))
}

func (c *conn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return c.result(redis.DoContext(c.Conn, ctx, cmd, args...))
}

func (c *conn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return c.result(redis.DoWithTimeout(c.Conn, d, cmd, args...))
}

// Flush sends what Send buffered; a write that fails on a connection that
// had answered before is a staleError (a flush is no answer).
func (c *conn) Flush() error {
	err := c.Conn.Flush()
	if err != nil && c.answered.Load() && connalive.Broken(err) {
		err = &staleError{err}
	}
	return err
}

func (c *conn) Receive() (any, error) {
	return c.result(c.Conn.Receive())
}

func (c *conn) ReceiveContext(ctx context.Context) (any, error) {
	return c.result(redis.ReceiveContext(c.Conn, ctx))
}

func (c *conn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return c.result(redis.ReceiveWithTimeout(c.Conn, d))
}

// dialer returns the pool's DialContext for Open: it dials hostPort with dial
// and the handshake of opts, and keeps the network connection for the check
// of idle connections.
func dialer(hostPort string, dial func(ctx context.Context, network, addr string) (net.Conn, error), opts []redis.DialOption) func(context.Context) (redis.Conn, error) {
	return func(ctx context.Context) (redis.Conn, error) {
		var raw net.Conn
		c, err := redis.DialContext(ctx, "tcp", hostPort, append(opts[:len(opts):len(opts)],
			redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := dial(ctx, network, addr)
				raw = nc
				return nc, err
			}))...)
		if err != nil {
			return nil, err
		}
		return &conn{Conn: c, raw: raw}, nil
	}
}
