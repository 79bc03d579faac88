package bench

import (
	"net"
	"sync"
	"time"
)

// delayProxy forwards TCP connections from a loopback port to a target
// address, delaying every byte by a fixed time in each direction, as a far
// network would: a round trip through it takes 2×delay more than without it.
// Bandwidth is not limited: bytes read together are forwarded together, and
// later bytes do not wait for earlier ones beyond their own delay.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newDelayProxy starts a proxy to target that delays each direction by
// delay.
func newDelayProxy(target string, delay time.Duration) (*delayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{ln: ln, target: target, delay: delay, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the proxy's "host:port".
func (p *delayProxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy and closes its connections.
func (p *delayProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track records c so that Close closes it; it returns false once the proxy
// is closed.
func (p *delayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *delayProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *delayProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Go(func() { p.serve(client) })
	}
}

// serve forwards one connection both ways until either side closes it.
func (p *delayProxy) serve(client net.Conn) {
	defer client.Close()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(server, client); server.Close() })
	wg.Go(func() { p.pipe(client, server); client.Close() })
	wg.Wait()
}

// chunk is bytes read at one time, due for writing at due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk delayed by p.delay after it was read,
// until src ends or a write fails.
func (p *delayProxy) pipe(dst, src net.Conn) {
	chunks := make(chan chunk, 1024)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		var failed bool
		for c := range chunks {
			if failed {
				continue // drain, so that the reader never blocks
			}
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.data); err != nil {
				failed = true
				src.Close() // stops the reader
			}
		}
	})
	defer close(chunks)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.delay)}
		}
		if err != nil {
			return // EOF, or closed
		}
	}
}
