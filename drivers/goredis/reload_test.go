package goredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// The failures that make a cluster node reload its slot map: those on the
// way to a server (which a failover may have replaced), not the server's
// replies nor a caller's cancellation.
func TestNeedsReload(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{refused, true},
		{fmt.Errorf("SET NX: %w", refused), true},
		{io.EOF, true},
		{context.DeadlineExceeded, true},
		{context.Canceled, false},
		{redis.Nil, false},
		{redis.ErrNoScript, false},
		{fmt.Errorf("EVALSHA: %w", reply("CLUSTERDOWN The cluster is down")), true},
	} {
		if got := needsReload(tc.err); got != tc.want {
			t.Errorf("needsReload(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// reply is a server's error reply, as go-redis' redis.Error.
type reply string

func (e reply) Error() string { return string(e) }
func (reply) RedisError()     {}

// A reloader asks for a reload at the first failure that calls for one, then
// at most once per reloadEvery, however many fail meanwhile; failures that
// say nothing of the slot map ask for none. It runs in a bubble
// (testing/synctest): the failures said to come at once do, whatever the
// machine's load, and reloadEvery passes to the nanosecond.
func TestReloaderRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		r := reloaderOf(func() { n.Add(1) })
		r.failed(errors.New("ERR something")) // a reply: says nothing of the map
		if got := n.Load(); got != 0 {
			t.Fatalf("reloads after a plain error reply = %d, want 0", got)
		}
		for range 100 {
			r.failed(io.EOF)
		}
		if got := n.Load(); got != 1 {
			t.Fatalf("reloads after 100 failures at once = %d, want 1", got)
		}
		time.Sleep(reloadEvery - time.Nanosecond)
		r.failed(io.EOF)
		if got := n.Load(); got != 1 {
			t.Fatalf("reloads after a failure 1ns before reloadEvery = %d, want 1", got)
		}
		time.Sleep(time.Nanosecond)
		for range 100 {
			r.failed(io.EOF)
		}
		if got := n.Load(); got != 2 {
			t.Fatalf("reloads after 100 failures reloadEvery after the first = %d, want 2", got)
		}
	})
}
