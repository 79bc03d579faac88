package testproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// dial connects to addr, with a deadline of 10s on every read and write.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c
}

// ping sends PING on c and returns the reply's line, or the error.
func ping(c net.Conn) (string, error) {
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// closedByPeer reports whether err is what a read of a connection the
// other side closed gives.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || strings.Contains(fmt.Sprint(err), "connection reset")
}

// The Proxy forwards each connection to the server, each way, and counts
// the connections.
func TestForwards(t *testing.T) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr())
	require.Zero(t, p.Accepted())
	for i := range 3 {
		c := dial(t, p.Addr())
		for range 2 {
			got, err := ping(c)
			require.NoError(t, err)
			require.Equal(t, "+PONG", got)
		}
		require.Equal(t, int64(i+1), p.Accepted())
	}
}

// A Gated Proxy closes each connection at once, counting it, until Open;
// then it forwards the new ones.
func TestGated(t *testing.T) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr(), testproxy.Gated())
	for i := range 2 {
		_, err := ping(dial(t, p.Addr()))
		require.True(t, closedByPeer(err), "a connection to a closed gate: want it closed, got %v", err)
		require.Equal(t, int64(i+1), p.Accepted())
	}
	p.Open()
	got, err := ping(dial(t, p.Addr()))
	require.NoError(t, err)
	require.Equal(t, "+PONG", got)
	require.Equal(t, int64(3), p.Accepted())
}

// A Gated Proxy never opened does not dial its upstream: one whose upstream
// nothing listens on still accepts, closes and counts connections.
func TestGatedNeverDials(t *testing.T) {
	p := testproxy.New(t, redistest.ClosedAddrs(t, 1)[0], testproxy.Gated())
	_, err := ping(dial(t, p.Addr()))
	require.True(t, closedByPeer(err), "want the connection closed, got %v", err)
	require.Equal(t, int64(1), p.Accepted())
}

// A connection the Proxy cannot forward (its upstream is down) is closed
// and counted.
func TestUpstreamDown(t *testing.T) {
	p := testproxy.New(t, redistest.ClosedAddrs(t, 1)[0])
	_, err := ping(dial(t, p.Addr()))
	require.True(t, closedByPeer(err), "want the connection closed, got %v", err)
	require.Equal(t, int64(1), p.Accepted())
}

// FirstReplyDelay: the first reply on a connection comes no sooner than
// the delay after the connection was made (a lower bound, which load only
// makes later); the replies are those of the server.
func TestFirstReplyDelay(t *testing.T) {
	srv := redistest.NewServer(t)
	const delay = 300 * time.Millisecond
	p := testproxy.New(t, srv.Addr(), testproxy.FirstReplyDelay(delay))
	for range 2 {
		start := time.Now()
		c := dial(t, p.Addr())
		got, err := ping(c)
		require.NoError(t, err)
		require.Equal(t, "+PONG", got)
		require.GreaterOrEqual(t, time.Since(start), delay, "the first reply came before the delay")
		got, err = ping(c)
		require.NoError(t, err)
		require.Equal(t, "+PONG", got)
	}
}

// ReplyDelay: every reply comes no sooner than the delay after its command
// was sent (a lower bound, which load only makes later), on a connection's
// later commands as on its first; with FirstReplyDelay, the first reply
// comes no sooner than the longer delay; the replies are those of the
// server.
func TestReplyDelay(t *testing.T) {
	srv := redistest.NewServer(t)
	const first, every = 300 * time.Millisecond, 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		opts  []testproxy.Option
		first time.Duration
	}{
		{"Alone", []testproxy.Option{testproxy.ReplyDelay(every)}, every},
		{"WithFirstReplyDelay", []testproxy.Option{testproxy.ReplyDelay(every), testproxy.FirstReplyDelay(first)}, first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testproxy.New(t, srv.Addr(), tc.opts...)
			start := time.Now()
			c := dial(t, p.Addr())
			for i := range 3 {
				got, err := ping(c)
				require.NoError(t, err)
				require.Equal(t, "+PONG", got)
				want := every
				if i == 0 {
					want = tc.first
				}
				require.GreaterOrEqual(t, time.Since(start), want, "reply %d came before its delay", i)
				start = time.Now()
			}
		})
	}
}

// Drop closes every connection open through the Proxy; it goes on
// forwarding new ones.
func TestDrop(t *testing.T) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr())
	var cs []net.Conn
	for range 3 {
		c := dial(t, p.Addr())
		_, err := ping(c)
		require.NoError(t, err)
		cs = append(cs, c)
	}
	p.Drop()
	for i, c := range cs {
		_, err := ping(c)
		require.True(t, closedByPeer(err), "connection %d after Drop: want it closed, got %v", i, err)
	}
	got, err := ping(dial(t, p.Addr()))
	require.NoError(t, err)
	require.Equal(t, "+PONG", got)
}

// The test's Cleanup closes the listener and every connection, a first
// reply held back for an hour included, and leaves no goroutine of the
// Proxy's.
func TestCleanup(t *testing.T) {
	srv := redistest.NewServer(t)
	ignore := goleak.IgnoreCurrent()
	var plain, held net.Conn
	var addr string
	t.Run("proxies", func(t *testing.T) {
		p := testproxy.New(t, srv.Addr())
		addr = p.Addr()
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		plain = c
		_, err = ping(c)
		require.NoError(t, err)

		slow := testproxy.New(t, srv.Addr(), testproxy.FirstReplyDelay(time.Hour))
		held, err = net.Dial("tcp", slow.Addr())
		require.NoError(t, err)
		_, err = held.Write([]byte("SET held yes\r\n"))
		require.NoError(t, err)
		// The server has answered: its reply is on its way to the
		// Proxy, which holds it back.
		require.Eventually(t, func() bool {
			v, err := srv.Do(t.Context(), "GET", "held")
			return err == nil && v == "yes"
		}, 10*time.Second, 10*time.Millisecond, "the SET through the Proxy did not reach the server")
	})
	defer plain.Close()
	defer held.Close()
	for name, c := range map[string]net.Conn{"forwarded": plain, "first reply held back": held} {
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
		_, err := c.Read(make([]byte, 16))
		require.True(t, closedByPeer(err), "%s connection after the Cleanup: want it closed, got %v", name, err)
	}
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the Proxy's address accepts a connection after the Cleanup")
	}
	goleak.VerifyNone(t, ignore)
}

// Close stops the Proxy within the test, as its Cleanup does: the
// connections end, no goroutine of the Proxy's is left, and a second Close
// (the Cleanup's) does nothing.
func TestClose(t *testing.T) {
	srv := redistest.NewServer(t)
	ignore := goleak.IgnoreCurrent()
	p := testproxy.New(t, srv.Addr())
	c := dial(t, p.Addr())
	_, err := ping(c)
	require.NoError(t, err)
	p.Close()
	_, err = ping(c)
	require.True(t, closedByPeer(err), "a connection after Close: want it closed, got %v", err)
	goleak.VerifyNone(t, ignore)
	p.Close()
}

// Serve proxies on the caller's listener, and closes it when the test ends.
func TestServe(t *testing.T) {
	srv := redistest.NewServer(t)
	var addr string
	t.Run("serve", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		p := testproxy.Serve(t, l, srv.Addr())
		addr = p.Addr()
		require.Equal(t, l.Addr().String(), addr)
		got, err := ping(dial(t, addr))
		require.NoError(t, err)
		require.Equal(t, "+PONG", got)
	})
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the listener accepts a connection after the Cleanup")
	}
}

// fatalTB records the test failure that New reports, and its Cleanups.
type fatalTB struct {
	testing.TB
	mu       sync.Mutex
	msg      string
	cleanups []func()
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Cleanup(fn func()) {
	f.mu.Lock()
	f.cleanups = append(f.cleanups, fn)
	f.mu.Unlock()
}

// Bad input fails the test with a clear message, and the listener is
// closed.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream string
		opts     []testproxy.Option
		want     string
	}{
		{"NoUpstream", "", nil, "no upstream address"},
		{"NegativeDelay", "127.0.0.1:1", []testproxy.Option{testproxy.FirstReplyDelay(-time.Second)}, "FirstReplyDelay(-1s): a delay cannot be negative"},
		{"NegativeReplyDelay", "127.0.0.1:1", []testproxy.Option{testproxy.ReplyDelay(-time.Second)}, "ReplyDelay(-1s): a delay cannot be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer l.Close()
			f := &fatalTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				testproxy.Serve(f, l, tc.upstream, tc.opts...)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return")
			}
			require.Contains(t, f.msg, tc.want)
			require.Empty(t, f.cleanups, "nothing started, nothing to clean up")
			_, err = l.Accept()
			require.ErrorIs(t, err, net.ErrClosed)
		})
	}
}
