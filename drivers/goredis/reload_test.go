package goredis

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

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
