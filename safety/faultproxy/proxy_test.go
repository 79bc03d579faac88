package faultproxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// conn is a raw RESP connection through a proxy, so that a test sees exactly
// what crosses it.
type conn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, r: bufio.NewReader(c)}
}

// send writes one command.
func (c *conn) send(args ...string) {
	c.t.Helper()
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	require.NoError(c.t, c.c.SetWriteDeadline(time.Now().Add(5*time.Second)))
	_, err := c.c.Write(b)
	require.NoError(c.t, err)
}

// line reads one reply line, waiting at most d.
func (c *conn) line(d time.Duration) (string, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(d)); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, p.Addr())
	require.NotEqual(t, s.Addr(), p.Addr())
	require.Equal(t, s.Addr(), p.Upstream())
	require.Empty(t, p.Faults())

	c := dial(t, p.Addr())
	c.send("SET", "k", "v")
	line, err := c.line(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", line)
	v, err := s.Do(t.Context(), "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "v", v)
}

func TestProxyOnlyLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"10.0.0.1:6379", "example.com:6379", "0.0.0.0:6379", "no-port"} {
		_, err := faultproxy.StartProxy(addr)
		require.Error(t, err, addr)
	}
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		p, err := faultproxy.StartProxy(addr)
		require.NoError(t, err, addr)
		require.NoError(t, p.Close())
		require.NoError(t, p.Close(), "closing twice")
		require.Error(t, p.Cut(), "a closed proxy")
	}
}

func TestProxyLatency(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	const d = 150 * time.Millisecond
	require.NoError(t, p.SetLatency(d, d))
	require.Equal(t, []string{"latency"}, p.Faults())

	start := time.Now()
	c.send("PING")
	line, err := c.line(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
	require.GreaterOrEqual(t, time.Since(start), 2*d, "delayed both ways")

	require.NoError(t, p.Heal())
	require.Empty(t, p.Faults())
	c.send("PING")
	line, err = c.line(10 * time.Second)
	require.NoError(t, err, "the connection survives the removal of latency")
	require.Equal(t, "+PONG\r\n", line)
	require.Error(t, p.SetLatency(-time.Second, 0))
}

func TestProxyCut(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	before := dial(t, p.Addr())
	before.send("PING")
	_, err := before.line(5 * time.Second)
	require.NoError(t, err)

	require.NoError(t, p.Cut())
	require.NoError(t, p.Cut(), "cutting twice")
	require.Equal(t, []string{"cut"}, p.Faults())
	_, err = before.line(5 * time.Second)
	require.False(t, isTimeout(err), "an existing connection is closed at once, got %v", err)
	require.Error(t, err)

	during := dial(t, p.Addr()) // the listener stays: connect, then be closed
	during.send("SET", "cut", "x")
	_, err = during.line(5 * time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err), "a new connection is closed at once, got %v", err)
	v, err := s.Do(t.Context(), "EXISTS", "cut")
	require.NoError(t, err)
	require.Equal(t, int64(0), v, "nothing is forwarded while cut")

	require.NoError(t, p.Heal())
	after := dial(t, p.Addr())
	after.send("PING")
	line, err := after.line(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
}

func TestProxyBlackhole(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	c.send("PING")
	_, err := c.line(5 * time.Second)
	require.NoError(t, err)

	require.NoError(t, p.Blackhole())
	require.Equal(t, []string{"blackhole"}, p.Faults())
	c.send("SET", "blackholed", "x")
	_, err = c.line(300 * time.Millisecond)
	require.True(t, isTimeout(err), "no answer, no close: got %v", err)
	fresh := dial(t, p.Addr()) // accepted
	fresh.send("PING")
	_, err = fresh.line(300 * time.Millisecond)
	require.True(t, isTimeout(err), "no answer, no close: got %v", err)
	v, err := s.Do(t.Context(), "EXISTS", "blackholed")
	require.NoError(t, err)
	require.Equal(t, int64(0), v, "requests never reach the server")

	require.NoError(t, p.Heal())
	_, err = c.line(5 * time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err), "healing closes the connections that lost data, got %v", err)
	after := dial(t, p.Addr())
	after.send("PING")
	line, err := after.line(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)
}

func TestProxyLoseReplies(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	idle := dial(t, p.Addr())
	idle.send("PING")
	_, err := idle.line(5 * time.Second)
	require.NoError(t, err)
	require.NoError(t, p.LoseReplies())
	require.Equal(t, []string{"lose replies"}, p.Faults())
	require.Zero(t, p.Dropped())

	c.send("SET", "applied", "x")
	_, err = c.line(300 * time.Millisecond)
	require.True(t, isTimeout(err), "the reply is swallowed: got %v", err)
	require.Equal(t, int64(len("+OK\r\n")), p.Dropped(), "the reply's bytes are counted as dropped")
	require.Eventually(t, func() bool {
		v, err := s.Do(t.Context(), "GET", "applied")
		return err == nil && v == "x"
	}, 5*time.Second, time.Millisecond, "the request was applied")

	require.NoError(t, p.Heal())
	require.Equal(t, int64(len("+OK\r\n")), p.Dropped(), "what was dropped stays counted after Heal")
	_, err = c.line(5 * time.Second)
	require.ErrorIs(t, err, io.EOF, "healing closes a connection that lost a reply: a stream cannot skip one")
	idle.send("PING")
	line, err := idle.line(5 * time.Second)
	require.NoError(t, err, "a connection that lost nothing carries on")
	require.Equal(t, "+PONG\r\n", line)
}

func TestProxyServerDown(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	require.NoError(t, s.Kill())
	c := dial(t, p.Addr())
	c.send("PING")
	_, err := c.line(5 * time.Second)
	require.Error(t, err)
	require.False(t, isTimeout(err), "a client of a dead server is disconnected at once, got %v", err)

	require.NoError(t, s.Restart(context.Background()))
	c = dial(t, p.Addr())
	c.send("PING")
	line, err := c.line(5 * time.Second)
	require.NoError(t, err, "the proxy reaches the restarted server on the same port")
	require.Equal(t, "+PONG\r\n", line)
}

func TestNewProxies(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	ps := faultproxy.NewProxies(t, servers)
	require.Len(t, ps, 2)
	addrs := redistest.Addrs(ps)
	for i, p := range ps {
		require.Equal(t, servers[i].Addr(), p.Upstream())
		require.Equal(t, p.Addr(), addrs[i])
	}
}
