package redlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Close of a Client over nodes that goredis.New made from the user's clients
// (configured as the package doc recommends), while the servers are stalled
// and a waiter's pub/sub connection is being dialed: Close returns after
// about its node timeout, rather than waiting for go-redis's handshake on
// that connection, which does not watch its context (4.8s before the fix,
// go-redis's dial timeout).
func TestRedisCloseWhileSubscriptionDialsStalled(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	holder := openRedis(t, "goredis", servers, redlock.WithTTL(time.Minute))
	_, err := holder.TryLock(t.Context(), "k")
	require.NoError(t, err)

	const nodeTimeout = 50 * time.Millisecond
	var nodes []driver.Node
	for _, s := range servers {
		rc := goredislib.NewClient(&goredislib.Options{Addr: s.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { rc.Close() })
		nodes = append(nodes, goredis.New(rc))
	}
	c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	for _, s := range servers {
		require.NoError(t, s.Pause())
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Resume()
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Lock(ctx, "k")
	require.Error(t, err)
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err = <-closed:
	case <-time.After(time.Second):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Logf("Close still runs after 1s:\n%s", buf)
		err = <-closed
	}
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("Close took %v", took)
	// A bound with room for a loaded machine, far below go-redis's 5s.
	require.Less(t, took, 2*time.Second, "Close took %v with a node timeout of %v", took, nodeTimeout)
}
