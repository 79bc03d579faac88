package bench

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestDelayProxy checks that the proxy of the Far case forwards bytes both
// ways unchanged, each way no sooner than its delay.
func TestDelayProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo
	}()
	const delay = 20 * time.Millisecond
	p, err := newDelayProxy(ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, msg := range [][]byte{[]byte("PING\r\n"), bytes.Repeat([]byte("x"), 100<<10)} {
		start := time.Now()
		go c.Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("reading the echo of %d bytes: %v", len(msg), err)
		}
		if rtt := time.Since(start); rtt < 2*delay {
			t.Errorf("round trip of %d bytes took %v, want at least 2×%v", len(msg), rtt, delay)
		}
		if !bytes.Equal(got, msg) {
			t.Errorf("the echo of %d bytes differs from what was sent", len(msg))
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
