//go:build unix

package connalive

import (
	"net"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// waitFor polls Alive(c) until it is want, for at most a second: what the
// peer does reaches the socket shortly after.
func waitFor(c net.Conn, want bool) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if Alive(c) == want {
			return true
		}
	}
	return false
}

func TestAlive(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		c, _ := pair(t)
		if !Alive(c) {
			t.Fatal("Alive = false for an open, idle connection")
		}
		if !Alive(c) {
			t.Fatal("Alive = false the second time: the probe must not change an open connection")
		}
	})
	t.Run("PeerClosed", func(t *testing.T) {
		c, s := pair(t)
		s.Close()
		if !waitFor(c, false) {
			t.Fatal("Alive = true for a connection the peer closed")
		}
	})
	t.Run("UnsolicitedBytes", func(t *testing.T) {
		c, s := pair(t)
		if _, err := s.Write([]byte("+OK\r\n")); err != nil {
			t.Fatal(err)
		}
		if !waitFor(c, false) {
			t.Fatal("Alive = true for a connection with a reply to nothing waiting")
		}
	})
	t.Run("ClosedHere", func(t *testing.T) {
		c, _ := pair(t)
		c.Close()
		if Alive(c) {
			t.Fatal("Alive = true for a closed connection")
		}
	})
}
