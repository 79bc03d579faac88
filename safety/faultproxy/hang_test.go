package faultproxy_test

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// The tests of this file check that no fault call hangs while connections
// come and go. Toxiproxy changes a link's chain of toxics by interrupting a
// toxic (ToxicStub.InterruptToxic), which waits until the toxic reads its
// Interrupt channel; a toxic blocked on sending a chunk to a stage that
// nobody reads any more never does, and the fault call, which holds the
// proxy's locks (ours and toxiproxy's ToxicCollection's, which every new
// connection also takes), never returns.

// faultTimeout bounds each fault call; a working one returns in milliseconds.
const faultTimeout = 10 * time.Second

// stressFor is how long a test keeps its fault calls and clients going when
// nothing hangs.
const stressFor = 5 * time.Second

// fault is a named fault call of a Proxy.
type fault struct {
	name string
	call func() error
}

// within runs call in a goroutine of its own and fails the test, with the
// stacks of the proxy's goroutines, if it has not returned within
// faultTimeout, or if it returned an error. It reports whether the call
// returned; one that did not is left blocked, holding the proxy's lock, so
// that the test must make no other call of the proxy. It may be called from
// any goroutine of the test.
func within(t *testing.T, f fault) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.call() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
		return true
	case <-time.After(faultTimeout):
		t.Errorf("%s has not returned after %v: the proxy hangs, and every later fault call "+
			"and new connection with it; the proxy's goroutines:\n%s", f.name, faultTimeout, proxyStacks())
		return false
	}
}

// startProxy starts a proxy in front of upstream and closes it when the test
// ends, unless the test failed: a proxy that hung cannot be closed (Close
// waits for toxiproxy's accept loop, which waits for the lock the hung call
// holds), so it is left behind.
func startProxy(t *testing.T, upstream string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.StartProxy(upstream)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s is not closed: a call of it hung", p)
			return
		}
		within(t, fault{"Close", p.Close})
	})
	return p
}

// proxyStacks returns the stacks of the goroutines in toxiproxy and
// faultproxy, each distinct stack once with how many goroutines share it,
// without arguments and file positions.
func proxyStacks() string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	count := make(map[string]int)
	var order []string
	for _, g := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		if !strings.Contains(g, "toxiproxy") && !strings.Contains(g, "faultproxy.(*Proxy)") {
			continue
		}
		lines := strings.Split(g, "\n")
		state := lines[0] // goroutine N [chan send, 2 minutes]:
		if i := strings.Index(state, "["); i >= 0 {
			state = state[i:]
		}
		if i := strings.Index(state, ", "); i >= 0 {
			state = state[:i] + "]:"
		}
		key := []string{state}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") {
				continue // file:line of the function above
			}
			if i := strings.Index(l, " in goroutine "); i > 0 {
				l = l[:i] // created by F in goroutine N
			} else if i := strings.LastIndex(l, "("); i > 0 && strings.HasSuffix(l, ")") {
				l = l[:i] // F(arguments)
			}
			key = append(key, "  "+l)
		}
		k := strings.Join(key, "\n")
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
	var out strings.Builder
	for i, k := range order {
		if i == 12 {
			fmt.Fprintf(&out, "... and %d more distinct stacks\n", len(order)-i)
			break
		}
		fmt.Fprintf(&out, "%d goroutine(s) %s\n", count[k], k)
	}
	return out.String()
}

// tcpServer starts a TCP server on 127.0.0.1 that runs serve on every
// connection it accepts, in a goroutine of its own, and closes the
// connection when serve returns; serve must bound its own waits. It returns
// the server's address and stops, waiting for serve, when the test ends.
func tcpServer(t *testing.T, serve func(*net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c.(*net.TCPConn))
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// stream writes 32 KiB blocks to c until a write fails or stalls for a
// second: many chunks through the proxy.
func stream(c *net.TCPConn) {
	block := make([]byte, 32<<10)
	for {
		if c.SetWriteDeadline(time.Now().Add(time.Second)) != nil {
			return
		}
		if _, err := c.Write(block); err != nil {
			return
		}
	}
}

// resetOnData waits for data to arrive on c, for a second at most, and
// resets c (SO_LINGER 0: an RST, not a FIN) with the rest of the data in
// flight: the proxy's next write to c fails.
func resetOnData(c *net.TCPConn) {
	one := make([]byte, 1)
	if c.SetReadDeadline(time.Now().Add(time.Second)) == nil {
		_, _ = c.Read(one)
	}
	_ = c.SetLinger(0)
	c.Close()
}

// clients runs n goroutines that each connect to addr, run client on the
// connection and close it, in a loop, until the returned stop function is
// called; stop waits for them. client must bound its own waits.
func clients(n int, addr string, client func(*net.TCPConn)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					select { // the proxy hung: its backlog is full
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
						continue
					}
				}
				client(c.(*net.TCPConn))
				c.Close()
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// TestFaultCallsOutlivePeersThatReset checks that fault calls return while
// a client, or the server, resets its connection with data on its way to
// it. Toxiproxy copies a link's output to its destination in one goroutine
// (ToxicLink.write); when a write fails, that goroutine ends and nobody reads
// the link's output again, so the last toxic of the chain stays blocked for
// ever on sending the next chunk (the noop and latency toxics send with no
// way out). Until the ended goroutine has removed its link from the
// ToxicCollection, which needs the collection's lock, a fault call that
// holds the lock and changes that direction's chain interrupts the blocked
// toxic and waits for ever.
func TestFaultCallsOutlivePeersThatReset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		server, client func(*net.TCPConn)
		faults         func(*faultproxy.Proxy) []fault
	}{
		{
			name:   "client resets, replies on the way",
			server: stream, client: resetOnData,
			faults: func(p *faultproxy.Proxy) []fault {
				return []fault{
					{"SetLatency(0, 1ms)", func() error { return p.SetLatency(0, time.Millisecond) }},
					{"SetLatency(0, 2ms)", func() error { return p.SetLatency(0, 2*time.Millisecond) }},
					{"Heal after latency", p.Heal},
					{"LoseReplies", p.LoseReplies},
					{"Heal after LoseReplies", p.Heal},
					{"Blackhole", p.Blackhole},
					{"Heal after Blackhole", p.Heal},
				}
			},
		},
		{
			name:   "server resets, requests on the way",
			server: resetOnData, client: stream,
			faults: func(p *faultproxy.Proxy) []fault {
				return []fault{
					{"SetLatency(1ms, 0)", func() error { return p.SetLatency(time.Millisecond, 0) }},
					{"SetLatency(2ms, 0)", func() error { return p.SetLatency(2*time.Millisecond, 0) }},
					{"Heal after latency", p.Heal},
					{"Blackhole", p.Blackhole},
					{"Heal after Blackhole", p.Heal},
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, tcpServer(t, tc.server))
			stop := clients(8, p.Addr(), tc.client)
			defer stop()
			faults := tc.faults(p)
			calls := 0
			for end := time.Now().Add(stressFor); time.Now().Before(end); calls++ {
				if !within(t, faults[calls%len(faults)]) {
					return
				}
			}
			t.Logf("%d fault calls returned", calls)
		})
	}
}

// TestCutOfDelayedRequestsThenHeal checks that Heal, right after Cut, returns
// while requests are delayed by SetLatency. Cut's toxic, added after the
// latency toxic, closes a link a millisecond after it starts on it and then
// reads no more; the latency toxic in front of it, holding requests that
// arrived before or after, blocks for ever on sending the next one to it
// (when its delay ends, or at once when interrupted: it flushes what it
// holds). Until the link's writer, which saw the cut's end of stream, has
// removed the link from the ToxicCollection, Heal's removal of the latency
// toxic interrupts that blocked toxic and waits for ever.
func TestCutOfDelayedRequestsThenHeal(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := startProxy(t, s.Addr())
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	stop := clients(8, p.Addr(), func(c *net.TCPConn) {
		// One PING a millisecond, each its own chunk through the proxy,
		// until the proxy closes the connection (replies are not read:
		// a few seconds of PONGs fit in the socket's buffer).
		for range 500 {
			if c.SetWriteDeadline(time.Now().Add(time.Second)) != nil {
				return
			}
			if _, err := c.Write(ping); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	defer stop()

	steps := []fault{
		{"SetLatency(50ms, 0)", func() error { return p.SetLatency(50*time.Millisecond, 0) }},
		{"Cut", p.Cut},
		{"Heal after Cut", p.Heal},
	}
	rounds := 0
	for end := time.Now().Add(stressFor); time.Now().Before(end); rounds++ {
		for i, f := range steps {
			if i == 2 && rounds%2 == 1 {
				time.Sleep(2 * time.Millisecond) // let the cut close its links
			}
			if !within(t, f) {
				return
			}
		}
	}
	t.Logf("%d rounds of SetLatency, Cut and Heal returned", rounds)
}
