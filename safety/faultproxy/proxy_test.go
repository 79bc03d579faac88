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

// ping sends PING and requires +PONG within 5 s; msgAndArgs say why it must
// come.
func (c *conn) ping(msgAndArgs ...any) {
	c.t.Helper()
	c.send("PING")
	line, err := c.line(5 * time.Second)
	require.NoError(c.t, err, msgAndArgs...)
	require.Equal(c.t, "+PONG\r\n", line, msgAndArgs...)
}

// closed requires that the connection is closed within 5 s: a read ends
// in an error that is not a timeout. what says what closed it.
func (c *conn) closed(what string) {
	c.t.Helper()
	_, err := c.line(5 * time.Second)
	require.Error(c.t, err, what)
	require.False(c.t, isTimeout(err), "%s, got %v", what, err)
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
	before.ping()

	require.NoError(t, p.Cut())
	require.NoError(t, p.Cut(), "cutting twice")
	require.Equal(t, []string{"cut"}, p.Faults())
	before.closed("an existing connection is closed at once")

	during := dial(t, p.Addr()) // the listener stays: connect, then be closed
	during.send("SET", "cut", "x")
	during.closed("a new connection is closed at once")
	v, err := s.Do(t.Context(), "EXISTS", "cut")
	require.NoError(t, err)
	require.Equal(t, int64(0), v, "nothing is forwarded while cut")

	require.NoError(t, p.Heal())
	after := dial(t, p.Addr())
	after.ping()
}

func TestProxyBlackhole(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	c.ping()

	require.NoError(t, p.Blackhole())
	require.Equal(t, []string{"blackhole"}, p.Faults())
	c.send("SET", "blackholed", "x")
	_, err := c.line(300 * time.Millisecond)
	require.True(t, isTimeout(err), "no answer, no close: got %v", err)
	fresh := dial(t, p.Addr()) // accepted
	fresh.send("PING")
	_, err = fresh.line(300 * time.Millisecond)
	require.True(t, isTimeout(err), "no answer, no close: got %v", err)
	v, err := s.Do(t.Context(), "EXISTS", "blackholed")
	require.NoError(t, err)
	require.Equal(t, int64(0), v, "requests never reach the server")

	require.NoError(t, p.Heal())
	c.closed("healing closes the connections that lost data")
	after := dial(t, p.Addr())
	after.ping()
}

func TestProxyLoseReplies(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	idle := dial(t, p.Addr())
	idle.ping()
	require.NoError(t, p.LoseReplies())
	require.Equal(t, []string{"lose replies"}, p.Faults())
	require.Zero(t, p.Dropped())

	c.send("SET", "applied", "x")
	_, err := c.line(300 * time.Millisecond)
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
	idle.ping("a connection that lost nothing carries on")
}

func TestProxyServerDown(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	require.NoError(t, s.Kill())
	c := dial(t, p.Addr())
	c.send("PING")
	c.closed("a client of a dead server is disconnected at once")

	require.NoError(t, s.Restart(context.Background()))
	c = dial(t, p.Addr())
	c.ping("the proxy reaches the restarted server on the same port")
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

// TestProxyDelayedDataDeliveredInOrder checks that data delayed by latency
// when the latency ends, by SetLatency(0, 0) or by Heal, is delivered in
// order and the connection carries on.
func TestProxyDelayedDataDeliveredInOrder(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	for _, end := range []struct {
		name string
		call func(*faultproxy.Proxy) error
	}{
		{"SetLatency(0, 0)", func(p *faultproxy.Proxy) error { return p.SetLatency(0, 0) }},
		{"Heal", (*faultproxy.Proxy).Heal},
	} {
		t.Run(end.name, func(t *testing.T) {
			t.Parallel()
			p := faultproxy.NewProxy(t, s.Addr())
			c := dial(t, p.Addr())
			require.NoError(t, p.SetLatency(time.Second, time.Second))
			words := []string{"a", "b", "c", "d"}
			for _, w := range words {
				c.send("ECHO", w) // one chunk each, all delayed
				time.Sleep(5 * time.Millisecond)
			}
			require.NoError(t, end.call(p))
			require.Empty(t, p.Faults())
			for _, w := range words {
				line, err := c.line(5 * time.Second)
				require.NoError(t, err, "the reply to ECHO %s", w)
				require.Equal(t, "$1\r\n", line, "the reply to ECHO %s", w)
				line, err = c.line(5 * time.Second)
				require.NoError(t, err)
				require.Equal(t, w+"\r\n", line, "replies in the order of their requests")
			}
			c.ping("the connection carries on")
		})
	}
}

// TestProxyCutThenHealResetsConnections checks that Cut followed at once by
// Heal closes every connection, idle ones too, and that new connections are
// forwarded again.
//
// It failed when Cut was a toxiproxy toxic that closed a link a millisecond
// after it started on it: Heal within that millisecond removed it, closing
// only the links it had dropped data on, so an idle connection carried on.
func TestProxyCutThenHealResetsConnections(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	c.ping()

	require.NoError(t, p.Cut())
	require.NoError(t, p.Heal())
	c.closed("an idle connection is closed by Cut then Heal")

	after := dial(t, p.Addr())
	after.ping()
}

// TestProxySeveralFaults checks that faults add up and Faults names each,
// sorted, until Heal ends them all.
func TestProxySeveralFaults(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	require.NoError(t, p.Heal(), "healing a healthy proxy")
	require.NoError(t, p.LoseReplies())
	require.NoError(t, p.SetLatency(time.Millisecond, 0))
	require.NoError(t, p.Blackhole())
	require.Equal(t, []string{"blackhole", "latency", "lose replies"}, p.Faults())
	require.NoError(t, p.SetLatency(0, 0))
	require.Equal(t, []string{"blackhole", "lose replies"}, p.Faults())
	require.NoError(t, p.Heal())
	require.Empty(t, p.Faults())
	c := dial(t, p.Addr())
	c.ping()
}

// TestProxyClose checks that Close closes every connection and the
// listener, and that a closed proxy refuses fault calls.
func TestProxyClose(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p, err := faultproxy.StartProxy(s.Addr())
	require.NoError(t, err)
	c := dial(t, p.Addr())
	c.ping()

	require.NoError(t, p.Close())
	c.closed("Close closes the connections")
	_, err = net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.Error(t, err, "Close closes the listener")
	for name, call := range map[string]func() error{
		"SetLatency":  func() error { return p.SetLatency(time.Millisecond, 0) },
		"Cut":         p.Cut,
		"Blackhole":   p.Blackhole,
		"LoseReplies": p.LoseReplies,
		"Heal":        p.Heal,
	} {
		require.Error(t, call(), "%s of a closed proxy", name)
	}
}
