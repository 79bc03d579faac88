package redistest_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// A Silent server accepts connections, counts them, reads what they send
// and answers nothing; Close ends every connection (its client reads EOF),
// returns once the server's goroutines ended (the race detector and the
// goroutine checks of other tests see none left), and may be called again.
func TestSilent(t *testing.T) {
	s := redistest.NewSilent(t)
	host, _, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q: want a 127.0.0.1 address (%v)", s.Addr(), err)
	}
	var conns []net.Conn
	for range 2 {
		c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Accept runs on the server's goroutine: wait for both, bounded.
	for deadline := time.Now().Add(5 * time.Second); s.Accepted() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Accepted() = %d after 5s, want 2", s.Accepted())
		}
	}
	c := conns[0]
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 1)
	if n, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %d, %v: want no answer (a deadline exceeded)", n, err)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(buf); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("connection %d after Close: Read = %d, %v: want it ended (EOF or reset)", i, n, err)
		} else if !errors.Is(err, io.EOF) {
			t.Logf("connection %d after Close: %v", i, err) // a reset, for the unread PING
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if got := s.Accepted(); got != 2 {
		t.Errorf("Accepted() after Close = %d, want 2", got)
	}
}
