package redlock_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	valkeylib "github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Close of a Client over nodes that a driver's New made from the user's
// clients (configured as the package doc recommends), while the servers are
// stalled and a waiter's pub/sub connection is being dialed: Close returns
// after about its node timeout, rather than waiting for the client's
// handshake on that connection, which does not watch its context (4.8s before
// the fix, the client's dial timeout: go-redis's, and rueidis's and
// valkey-go's in Dedicate).
func TestRedisCloseWhileSubscriptionDialsStalled(t *testing.T) {
	for name, newNode := range map[string]func(t *testing.T, addr string) driver.Node{
		"goredis": func(t *testing.T, addr string) driver.Node {
			rc := goredislib.NewClient(&goredislib.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { rc.Close() })
			return goredis.New(rc)
		},
		"rueidis": func(t *testing.T, addr string) driver.Node {
			rc, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true})
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			return rueidis.New(rc)
		},
		"valkeygo": func(t *testing.T, addr string) driver.Node {
			vc, err := valkeylib.NewClient(valkeylib.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true})
			require.NoError(t, err)
			t.Cleanup(vc.Close)
			return valkeygo.New(vc)
		},
	} {
		t.Run(name, func(t *testing.T) { closeWhileSubscriptionDialsStalled(t, name, newNode) })
	}
}

func closeWhileSubscriptionDialsStalled(t *testing.T, name string, newNode func(t *testing.T, addr string) driver.Node) {
	servers := redistest.NewServers(t, 3)
	holder := openRedis(t, name, servers, redlock.WithTTL(time.Minute))
	_, err := holder.TryLock(t.Context(), "k")
	require.NoError(t, err)

	const nodeTimeout = 50 * time.Millisecond
	var nodes []driver.Node
	for _, s := range servers {
		nodes = append(nodes, newNode(t, s.Addr()))
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
	start := time.Now()
	_, err = c.Lock(ctx, "k")
	require.Error(t, err)
	require.Less(t, time.Since(start), 2*time.Second, "Lock with a 300ms context on stalled servers")
	start = time.Now()
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
	// A bound with room for a loaded machine, far below the clients' 5s.
	require.Less(t, took, 2*time.Second, "Close took %v with a node timeout of %v", took, nodeTimeout)
}
