// Package testproxy is a loopback TCP proxy for tests, put in front of a
// redis-server to make it a node that is down and then up ([Gated]), slow to
// make a connection ([FirstReplyDelay]), far ([ReplyDelay]), or whose
// connections break ([Proxy.Drop]), and to count the connections a client makes
// ([Proxy.Accepted]).
//
// A Proxy belongs to one test: every goroutine it starts has ended when the
// test's Cleanup of it (or an earlier [Proxy.Close]) returns, and no wait of it outlives that Cleanup. It
// is internal, imported by test code alone, so it adds nothing to users'
// builds or to the public API.
package testproxy

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An Option changes what a Proxy does with the connections it accepts.
type Option func(*config)

type config struct {
	gated bool
	delay time.Duration // FirstReplyDelay's
	every time.Duration // ReplyDelay's
}

// Gated makes the Proxy start closed: until [Proxy.Open], it closes each
// connection it accepts at once, without dialing the upstream, as a node
// that is down (or a server that drops every client) does. A Gated Proxy
// that is never opened never dials its upstream.
func Gated() Option { return func(c *config) { c.gated = true } }

// FirstReplyDelay holds back the upstream's first reply on each connection
// until d has passed since the Proxy accepted the connection; later replies
// pass at once: a connection that takes d to make (a loaded machine, a far
// server, a slow TLS handshake) to a server that answers at once once it is
// made. A reply held back when the test ends is dropped with its
// connection. d must not be negative.
func FirstReplyDelay(d time.Duration) Option { return func(c *config) { c.delay = d } }

// ReplyDelay holds back every reply of the upstream, on each connection,
// until d has passed since the Proxy read it: for calls sent one at a time,
// a link whose round trip is d longer (a far server), on made connections
// as on new ones. The Proxy reads a connection's next replies only once it
// has written those it held, so replies that come while others are held
// wait behind them: pipelined calls get theirs d apart, not all d late. With
// [FirstReplyDelay], a connection's first reply goes at the later of the
// two. d must not be negative.
func ReplyDelay(d time.Duration) Option { return func(c *config) { c.every = d } }

// A Proxy forwards each connection it accepts on a loopback address to its
// upstream address, each way, until either side closes it.
type Proxy struct {
	l        net.Listener
	upstream string
	cfg      config
	ctx      context.Context // ends when the test's Cleanup starts
	cancel   context.CancelFunc
	stopped  sync.Once
	opened   atomic.Bool
	accepted atomic.Int64
	wg       sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]bool // open, both sides of each forwarded connection
	closed bool              // the Cleanup has started: close what comes
}

// New starts a Proxy to upstream on a new port of 127.0.0.1, stopped by
// the test's Cleanup: it closes the listener and every connection, and
// waits for the Proxy's goroutines. It fails the test if upstream is empty,
// an Option is invalid or no port can be had.
func New(tb testing.TB, upstream string, opts ...Option) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testproxy: listening on a loopback port: %v", err)
	}
	return serve(tb, l, upstream, opts)
}

// Serve is [New] on a listener of the caller's (one on an address a client
// was given before the Proxy existed, say), which the Proxy closes with
// the rest when the test ends, or at once if it fails the test.
func Serve(tb testing.TB, l net.Listener, upstream string, opts ...Option) *Proxy {
	tb.Helper()
	return serve(tb, l, upstream, opts)
}

func serve(tb testing.TB, l net.Listener, upstream string, opts []Option) *Proxy {
	tb.Helper()
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch {
	case upstream == "":
		l.Close()
		tb.Fatalf("testproxy: no upstream address")
	case cfg.delay < 0:
		l.Close()
		tb.Fatalf("testproxy: FirstReplyDelay(%v): a delay cannot be negative", cfg.delay)
	case cfg.every < 0:
		l.Close()
		tb.Fatalf("testproxy: ReplyDelay(%v): a delay cannot be negative", cfg.every)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{l: l, upstream: upstream, cfg: cfg, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]bool)}
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

// Addr returns the address the Proxy listens on, host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Open makes a [Gated] Proxy forward the connections it accepts from now
// on; those it closed stay closed. On a Proxy not Gated it does nothing.
func (p *Proxy) Open() { p.opened.Store(true) }

// Accepted returns how many connections the Proxy has accepted, those a
// [Gated] Proxy closed at once and those it could not forward included.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Drop closes every connection open through the Proxy, both sides, as a
// network failure would; the Proxy goes on accepting new ones.
func (p *Proxy) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Close stops the Proxy before the test ends (to look for goroutines left
// behind, say), as the test's Cleanup does anyway: it closes the listener
// and every connection, and returns once the Proxy's goroutines have
// ended. A second Close does nothing.
func (p *Proxy) Close() { p.stopped.Do(p.stop) }

func (p *Proxy) stop() {
	p.cancel()
	p.l.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Drop()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	var d net.Dialer
	for {
		c, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		accepted := time.Now()
		p.accepted.Add(1)
		if p.cfg.gated && !p.opened.Load() {
			c.Close()
			continue
		}
		s, err := d.DialContext(p.ctx, "tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Go(func() {
			io.Copy(s, c)
			p.close(s)
		})
		p.wg.Go(func() {
			p.reply(c, s, accepted)
			p.close(c)
		})
	}
}

// track records c and s as open, or closes both if the Cleanup has started.
func (p *Proxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		s.Close()
		return false
	}
	p.conns[c], p.conns[s] = true, true
	return true
}

func (p *Proxy) close(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// reply copies s's replies to c, the first no sooner than the first reply's
// delay after accepted, each no sooner than the reply delay after it was
// read.
func (p *Proxy) reply(c, s net.Conn, accepted time.Time) {
	if p.cfg.delay == 0 && p.cfg.every == 0 {
		io.Copy(c, s)
		return
	}
	buf := make([]byte, 32<<10)
	due := accepted.Add(p.cfg.delay)
	for {
		n, err := s.Read(buf)
		if err != nil {
			return
		}
		if at := time.Now().Add(p.cfg.every); at.After(due) {
			due = at
		}
		t := time.NewTimer(time.Until(due))
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
		if p.cfg.every == 0 { // only the first reply is held back
			io.Copy(c, s)
			return
		}
	}
}
