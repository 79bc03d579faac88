package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/tlsdial"
)

// refusalWait bounds how long refusalOnConnect waits for the server to speak.
const refusalWait = 500 * time.Millisecond

// refusalOnConnect returns the error reply that the server at a sends unasked
// on a new connection before it closes it, as a server that refuses clients
// does ("ERR max number of clients reached"), or "" when it sends nothing
// within min(timeout, refusalWait), or something else. A client that writes
// its handshake first sees such a refusal only as a reset connection, a
// broken pipe or EOF: doctor and status ask, after a call failed so, to say
// why.
func refusalOnConnect(ctx context.Context, a redisaddr.Addr, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, refusalWait))
	defer cancel()
	d := &net.Dialer{}
	var (
		conn net.Conn
		err  error
	)
	if cfg, cerr := a.TLSConfig(nil); cerr != nil {
		return ""
	} else if cfg != nil {
		conn, err = tlsdial.Dial(ctx, d, "tcp", a.HostPort(), cfg)
	} else {
		conn, err = d.DialContext(ctx, "tcp", a.HostPort())
	}
	if err != nil {
		return ""
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetReadDeadline(dl)
	}
	buf := make([]byte, 256)
	n := 0
	for n < len(buf) {
		m, rerr := conn.Read(buf[n:])
		n += m
		if bytes.Contains(buf[:n], []byte("\r\n")) || rerr != nil {
			break
		}
	}
	line, _, ok := bytes.Cut(buf[:n], []byte("\r\n"))
	if !ok || len(line) < 2 || line[0] != '-' {
		return ""
	}
	s := string(line[1:])
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q // a byte that would not show as itself
	}
	return s
}

// isTimeout reports whether err is the end of a deadline: a server that did
// not answer, rather than one that refused.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
