package redistest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Silent is a TCP server on a loopback port that accepts every connection,
// reads and discards what it sends, and never answers: a hung server, or a
// Redis node whose process stopped answering with its socket still open, for
// tests of timeouts and of how a client gives up. Its methods are safe for
// concurrent use.
type Silent struct {
	l  net.Listener
	wg sync.WaitGroup // the accept loop and each connection's reader

	mu       sync.Mutex
	conns    []net.Conn
	accepted int
	closed   bool
}

// ListenSilent starts a Silent server on 127.0.0.1, on a free port. Close
// stops it.
func ListenSilent() (*Silent, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Silent{l: l}
	s.wg.Go(s.serve)
	return s, nil
}

// NewSilent starts a Silent server with [ListenSilent] and closes it when
// the test ends; it fails the test if it cannot listen.
func NewSilent(tb testing.TB) *Silent {
	tb.Helper()
	s, err := ListenSilent()
	if err != nil {
		tb.Fatalf("redistest: NewSilent: %v", err)
		return nil
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// serve accepts connections until the listener closes.
func (s *Silent) serve() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed { // Close ran between Accept and here
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns = append(s.conns, c)
		s.accepted++
		s.mu.Unlock()
		s.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
	}
}

// Addr returns the server's address, host:port.
func (s *Silent) Addr() string { return s.l.Addr().String() }

// Accepted returns how many connections the server has accepted so far.
func (s *Silent) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Close stops listening, closes every connection the server accepted (their
// clients then read EOF) and returns once its goroutines have ended. Calls
// after the first do nothing and return nil.
func (s *Silent) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.l.Close()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
	return err
}
