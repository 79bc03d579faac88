package redigo

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/internal/connalive"
)

// idleCheck is how long a pooled connection of Open's may stay unused before
// the pool checks, when it hands it out, that the server has not closed it
// (a restart, CLIENT KILL, its timeout): long enough that calls in a row pay
// nothing, short enough that a connection closed while the node was idle
// does not fail the next call. The check reads the socket without blocking,
// with no round trip (package connalive). As on the other drivers, a
// connection closed within idleCheck of its last call fails the next call
// made on it, as it would a call in flight.
const idleCheck = time.Second

// errIdleClosed is the pool's verdict on an idle connection that the server
// closed: the pool drops it and takes another, or dials.
var errIdleClosed = errors.New("redigo: the server closed the idle connection")

// conn is a connection of Open's pools, with its network connection, which
// the pool's check reads (see idleCheck). It has the contexts and timeouts
// of the connection it wraps, which the node's calls need.
type conn struct {
	redis.Conn
	raw net.Conn
}

func (c *conn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

func (c *conn) DoWithTimeout(d time.Duration, cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, d, cmd, args...)
}

func (c *conn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

func (c *conn) ReceiveWithTimeout(d time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, d)
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

// checkIdle is the pool's TestOnBorrow for Open: a connection unused for
// idleCheck or more is handed out only if the server has not closed it.
func checkIdle(c redis.Conn, used time.Time) error {
	if time.Since(used) < idleCheck {
		return nil
	}
	if cc, ok := c.(*conn); ok && cc.raw != nil && !connalive.Alive(cc.raw) {
		return errIdleClosed
	}
	return nil
}
