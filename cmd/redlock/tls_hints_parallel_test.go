package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// tlsHints probes the rediss:// nodes whose calls timed out at once, not
// one after the other: each probe of a node that answers nothing (a host
// down, a port that drops packets) waits its whole refusalWait, and run,
// hold and the wait's warning each waited that once for every such node in
// turn (5 nodes: 2.5s more, twice, on a failure the user already waits
// for). Checked without timing: the first node, a plaintext server, answers
// its probe's PING only once the two others, silent, have been probed too;
// probed one after the other, its probe had given up before they were, and
// its hint was missing.
func TestTLSHintsProbeAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	others := []*redistest.Silent{redistest.NewSilent(t), redistest.NewSilent(t)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		gone := make(chan struct{})
		go func() { // the probe's PING, then its close
			defer close(gone)
			buf := make([]byte, 64)
			for {
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		}()
		defer func() { <-gone }()
		for {
			if others[0].Accepted() > 0 && others[1].Accepted() > 0 {
				conn.Write([]byte("+PONG\r\n"))
				return
			}
			select {
			case <-gone: // the probe gave up first
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	defer func() {
		l.Close()
		<-served
	}()
	addrs := []string{"rediss://" + l.Addr().String()}
	for _, s := range others {
		addrs = append(addrs, "rediss://"+s.Addr())
	}
	var errs []error
	for _, s := range addrs {
		a, err := redisaddr.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		// NodeError.Addr is the node's name, as the Client gives it.
		errs = append(errs, &redlock.NodeError{Addr: a.String(), Err: context.DeadlineExceeded})
	}
	hints := tlsHints(context.Background(), addrs, errors.Join(errs...))
	if len(hints) != 1 || !strings.Contains(hints[0], "+PONG") || !strings.Contains(hints[0], l.Addr().String()) {
		t.Errorf("want one hint, for the first node (+PONG), its probe answered once the others were probed too; got %q", hints)
	}
}
