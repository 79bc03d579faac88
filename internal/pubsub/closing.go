package pubsub

import (
	"context"
	"io"
	"net"

	"github.com/go-redlock/redlock/internal/untildone"
)

// CloseOnDone returns conn, closed when ctx ends. A driver whose client
// dials and handshakes a pub/sub connection without watching the Dialer's
// context wraps the connection it dials for the hub in it, so that Close does
// not wait for a handshake with a stalled server.
func CloseOnDone(ctx context.Context, conn net.Conn) net.Conn {
	return closingConn{Conn: conn, stop: context.AfterFunc(ctx, func() { conn.Close() })}
}

type closingConn struct {
	net.Conn
	stop func() bool
}

func (c closingConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// DialUntilDone runs dial, which may not watch ctx (a client's dial and
// handshake bounded only by its own timeouts), on a goroutine of its own, and
// returns its result, or ctx's error as soon as ctx ends: the hub's Close
// then does not wait for a stalled server. A connection that dial makes after
// that is closed; the goroutine ends when dial returns.
func DialUntilDone[C io.Closer](ctx context.Context, dial func() (C, error)) (C, error) {
	return untildone.Do(ctx, dial, func(c C, err error) {
		if err == nil && any(c) != nil {
			c.Close()
		}
	})
}
