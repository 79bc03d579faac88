package faultproxy_test

import (
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// pong checks that c answers a PING within 5 s.
func (c *conn) pong(msgAndArgs ...any) {
	c.t.Helper()
	c.send("PING")
	line, err := c.line(5 * time.Second)
	require.NoError(c.t, err, msgAndArgs...)
	require.Equal(c.t, "+PONG\r\n", line, msgAndArgs...)
}

// pinged dials n connections through p and checks that each answers a PING,
// so that each is a link of the proxy's before the test's faults.
func pinged(t *testing.T, p *faultproxy.Proxy, n int) []*conn {
	t.Helper()
	cs := make([]*conn, n)
	for i := range cs {
		cs[i] = dial(t, p.Addr())
		cs[i].pong()
	}
	return cs
}

// TestCutThenHealResetsEveryConnection checks Cut's promise that Cut followed
// at once by Heal resets every connection (notice_test.go relies on it to
// make clients reconnect): each connection must end, none may answer.
func TestCutThenHealResetsEveryConnection(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	for round := range 5 {
		cs := pinged(t, p, 20)
		require.NoError(t, p.Cut())
		require.NoError(t, p.Heal())
		for i, c := range cs {
			c.send("PING") // may fail: the connection may be closed already
			line, err := c.line(2 * time.Second)
			require.Error(t, err, "round %d: connection %d survived Cut then Heal and answered %q", round, i, line)
			require.False(t, isTimeout(err), "round %d: connection %d: want end of file or reset, got %v", round, i, err)
		}
	}
}

// repliesHeldBack starts a server, a proxy in front of it and a connection
// through the proxy that has answered a PING, and holds every later reply
// back for an hour.
func repliesHeldBack(t *testing.T) (*redistest.Server, *faultproxy.Proxy, *conn) {
	t.Helper()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := pinged(t, p, 1)[0]
	require.NoError(t, p.SetLatency(0, time.Hour))
	return s, p, c
}

// TestBlackholeDropsRepliesHeldBackByLatency checks Blackhole's promise that
// replies held back by latency are dropped, and that Heal then closes the
// connection that lost them.
func TestBlackholeDropsRepliesHeldBackByLatency(t *testing.T) {
	t.Parallel()
	s, p, c := repliesHeldBack(t)
	c.send("SET", "held", "x")
	require.Eventually(t, func() bool {
		v, err := s.Do(t.Context(), "EXISTS", "held")
		return err == nil && v == int64(1)
	}, 5*time.Second, time.Millisecond, "the request was applied")
	// The reply reaches the proxy soon after the server applies the SET.
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, p.Blackhole())
	require.Eventually(t, func() bool { return p.Dropped() == int64(len("+OK\r\n")) },
		5*time.Second, time.Millisecond, "the held-back reply is dropped")
	require.NoError(t, p.Heal())
	_, err := c.line(5 * time.Second)
	require.ErrorIs(t, err, io.EOF, "the connection that lost a reply is closed")
}

// TestHealClosesOnlyConnectionsThatLostData checks Heal's promise on many
// connections at once: those that lost a reply end, the idle ones carry on.
func TestHealClosesOnlyConnectionsThatLostData(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	cs := pinged(t, p, 20)
	require.NoError(t, p.LoseReplies())
	for i, c := range cs {
		if i%2 == 0 {
			c.send("INCR", "lost")
		}
	}
	want := int64(len(cs) / 2 * len(":1\r\n"))
	require.Eventually(t, func() bool { return p.Dropped() >= want }, 5*time.Second, time.Millisecond,
		"every reply to the even connections is dropped")
	require.NoError(t, p.Heal())
	for i, c := range cs {
		if i%2 == 0 {
			_, err := c.line(5 * time.Second)
			require.ErrorIs(t, err, io.EOF, "connection %d lost a reply", i)
			continue
		}
		c.pong("connection %d lost nothing", i)
	}
}

// TestLatencyChangesKeepOrder pipelines INCRs on one connection while
// another goroutine keeps changing the latency: the replies must come back
// complete and in order.
func TestLatencyChangesKeepOrder(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	c := dial(t, p.Addr())
	const n = 2000
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			d := time.Duration(i%7) * time.Millisecond
			if err := p.SetLatency(d, 6*time.Millisecond-d); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for range n {
			select {
			case <-done:
				return
			default:
			}
			c.send("INCR", "order")
			time.Sleep(50 * time.Microsecond)
		}
	})
	for i := 1; i <= n; i++ {
		line, err := c.line(10 * time.Second)
		require.NoError(t, err)
		require.Equal(t, ":"+strconv.Itoa(i)+"\r\n", line)
	}
}

// TestMethodsAfterClose checks that every fault call on a closed proxy
// returns an error.
func TestMethodsAfterClose(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p, err := faultproxy.StartProxy(s.Addr())
	require.NoError(t, err)
	require.NoError(t, p.Close())
	for name, call := range map[string]func() error{
		"SetLatency":  func() error { return p.SetLatency(time.Millisecond, 0) },
		"Cut":         p.Cut,
		"Blackhole":   p.Blackhole,
		"LoseReplies": p.LoseReplies,
		"Heal":        p.Heal,
	} {
		require.Error(t, call(), name)
	}
	require.NoError(t, p.Close())
}

// proxyGoroutines returns how many goroutines run code of toxiproxy or of
// this package (not of its tests).
func proxyGoroutines() int {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/Shopify/toxiproxy") || strings.Contains(g, "faultproxy.(") {
			n++
		}
	}
	return n
}

// TestCloseEndsEveryGoroutine checks that Close ends every connection and
// every goroutine of the proxy, whatever its connections are doing: idle,
// holding data back for latency, blackholed, cut, or with a writer that
// ended on a reset while data was on its way (its toxic waits to send).
// It does not run in parallel, so that it sees only its own proxies'
// goroutines.
func TestCloseEndsEveryGoroutine(t *testing.T) {
	s := redistest.NewServer(t)
	require.Eventually(t, func() bool { return proxyGoroutines() == 0 }, 10*time.Second, 10*time.Millisecond,
		"no proxy left by earlier tests:\n%s", proxyStacks())

	held, err := faultproxy.StartProxy(s.Addr())
	require.NoError(t, err)
	idle := pinged(t, held, 3)
	require.NoError(t, held.SetLatency(time.Hour, time.Hour))
	idle[0].send("PING") // held back on its way to the server

	holed, err := faultproxy.StartProxy(s.Addr())
	require.NoError(t, err)
	hc := pinged(t, holed, 2)
	require.NoError(t, holed.Blackhole())
	hc[0].send("PING")

	cut, err := faultproxy.StartProxy(s.Addr())
	require.NoError(t, err)
	pinged(t, cut, 2)
	require.NoError(t, cut.Cut())
	dial(t, cut.Addr()) // started and closed while cut

	dead, err := faultproxy.StartProxy(tcpServer(t, stream))
	require.NoError(t, err)
	for range 4 {
		c, err := net.DialTimeout("tcp", dead.Addr(), 5*time.Second)
		require.NoError(t, err)
		resetOnData(c.(*net.TCPConn))
	}
	time.Sleep(100 * time.Millisecond) // the resets end the writers

	for _, p := range []*faultproxy.Proxy{held, holed, cut, dead} {
		require.True(t, within(t, fault{"Close of " + p.String(), p.Close}))
	}
	for i, c := range append(idle, hc...) {
		_, err := c.line(5 * time.Second)
		require.Error(t, err)
		require.False(t, isTimeout(err), "connection %d is closed by Close, got %v", i, err)
	}
	require.Eventually(t, func() bool { return proxyGoroutines() == 0 }, 10*time.Second, 10*time.Millisecond,
		"every goroutine of the closed proxies ends:\n%s", proxyStacks())
}

// TestLoweredLatencyDeliversHeldData checks SetLatency's promise that data
// already held back is delivered once its arrival plus the new delay has
// passed, and that a reply held back when the server closes the connection
// is delivered before the end of the stream.
func TestLoweredLatencyDeliversHeldData(t *testing.T) {
	t.Parallel()
	_, p, c := repliesHeldBack(t)
	c.send("PING")
	_, err := c.line(200 * time.Millisecond)
	require.True(t, isTimeout(err), "the reply is held back: got %v", err)
	require.NoError(t, p.SetLatency(0, 50*time.Millisecond))
	line, err := c.line(5 * time.Second)
	require.NoError(t, err, "the held reply is delivered under the new latency")
	require.Equal(t, "+PONG\r\n", line)

	c.send("QUIT") // the server replies and closes its end
	line, err = c.line(5 * time.Second)
	require.NoError(t, err, "the reply comes before the end of the stream")
	require.Equal(t, "+OK\r\n", line)
	_, err = c.line(5 * time.Second)
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, p.Dropped())
}

// fullBacklog returns the address of a listener on 127.0.0.1 that never
// accepts and whose accept queue is full, as a paused redis-server's is once
// it has queued tcp-backlog connections: the kernel drops new SYNs, and a
// dial waits for its SYN retries (about two minutes on Linux).
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	in4, ok := sa.(*syscall.SockaddrInet4)
	require.True(t, ok)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
	for range 64 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // the queue is full
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("%s still accepts connections after 64", addr)
	return ""
}

// TestCloseWhileUpstreamDialWaits checks that Close does not wait on a
// connection when toxiproxy's accept loop is dialing an upstream that does
// not answer: it does (toxiproxy v2.5.0's Proxy.server dials the upstream
// with net.Dial, no timeout, and Stop waits for that loop), for as long as
// the kernel retries the SYN. Skipped: a known defect of toxiproxy's, not
// fixed here; FAULTPROXY_KNOWN_DEFECTS=1 runs it.
func TestCloseWhileUpstreamDialWaits(t *testing.T) {
	if os.Getenv("FAULTPROXY_KNOWN_DEFECTS") == "" {
		t.Skip("Close waits for toxiproxy's dial of an upstream whose accept queue is full (about two minutes); " +
			"FAULTPROXY_KNOWN_DEFECTS=1 runs this test")
	}
	t.Parallel()
	p, err := faultproxy.StartProxy(fullBacklog(t))
	require.NoError(t, err)
	c := dial(t, p.Addr())
	c.send("PING")
	time.Sleep(100 * time.Millisecond) // the proxy has accepted it and is dialing
	within(t, fault{"Close", p.Close})
}

// TestHealKeepsIdleConnections checks that a connection that lost nothing
// while the proxy was blackholed carries on after Heal, even when its
// request follows Heal at once: data that reaches the proxy after Heal
// must not be dropped by a toxic that has not yet seen the Heal.
func TestHealKeepsIdleConnections(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := faultproxy.NewProxy(t, s.Addr())
	cs := pinged(t, p, 30)
	for round := range 10 {
		require.NoError(t, p.Blackhole())
		require.NoError(t, p.Heal())
		for _, c := range cs {
			c.send("PING")
		}
		for i, c := range cs {
			line, err := c.line(5 * time.Second)
			require.NoError(t, err, "round %d: connection %d lost nothing before Heal", round, i)
			require.Equal(t, "+PONG\r\n", line)
		}
	}
	require.Zero(t, p.Dropped())
}
