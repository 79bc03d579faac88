package redisserver

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"
)

// Do sends one command to the server and returns its reply, for tests that
// inspect or change keys without a Redis driver:
//
//	srv.Do(ctx, "SET", "k", "v", "PX", "1000") // "OK", nil
//	srv.Do(ctx, "PTTL", "k")                   // int64(1000) or a little less, nil
//
// Replies are returned as string (simple and bulk strings), int64 (integers),
// nil (null), []any (arrays, whose error elements are RedisError values). An
// error reply is returned as a [RedisError] error. Every call opens a fresh TCP
// connection, authenticates first if the server has a password, and is
// abandoned when ctx is done; the error then wraps ctx.Err(). Without a
// deadline in ctx, Do against a paused server waits until it is resumed.
func (s *Server) Do(ctx context.Context, args ...string) (any, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if len(args) == 0 {
		return nil, errors.New("redistest: Do needs a command")
	}
	return do(ctx, s.addr, s.cfg.password, s.cfg.clientTLS(), args)
}

// do runs one command on a new connection to addr, a TLS connection when tc
// is not nil.
func do(ctx context.Context, addr, password string, tc *tls.Config, args []string) (any, error) {
	replies, err := doAll(ctx, addr, password, tc, [][]string{args})
	if err != nil {
		return nil, err
	}
	if rerr, ok := replies[0].(RedisError); ok {
		return nil, rerr
	}
	return replies[0], nil
}

// doAll sends cmds in order on one new connection to addr (a TLS connection
// when tc is not nil), pipelined, and returns their replies, in which error
// replies are RedisError values. A failed AUTH is returned as the error.
// cmds must not be empty, nor any of its commands.
func doAll(ctx context.Context, addr, password string, tc *tls.Config, cmds [][]string) ([]any, error) {
	fail := func(err error) error {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return fmt.Errorf("redistest: %s on %s: %w (%w)", cmds[0][0], addr, cerr, err)
		}
		return fmt.Errorf("redistest: %s on %s: %w", cmds[0][0], addr, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(err)
	}
	conn, err := dial(ctx, addr, tc)
	if err != nil {
		return nil, fail(err)
	}
	defer conn.Close()
	// Unblock any read or write once ctx is done; ctx.Err() is set by then.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	if password != "" {
		if err := writeCommand(w, []string{"AUTH", password}); err != nil {
			return nil, fail(err)
		}
		v, err := readReply(r)
		if err != nil {
			return nil, fail(err)
		}
		if rerr, ok := v.(RedisError); ok {
			return nil, rerr
		}
	}
	for _, args := range cmds {
		if err := writeCommand(w, args); err != nil {
			return nil, fail(err)
		}
	}
	replies := make([]any, len(cmds))
	for i := range cmds {
		v, err := readReply(r)
		if err != nil {
			return nil, fail(err)
		}
		replies[i] = v
	}
	return replies, nil
}
