package pubsub

import (
	"context"
	"net"
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
