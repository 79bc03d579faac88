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
	for name, newNode := range userClientNodes {
		t.Run(name, func(t *testing.T) { closeWhileSubscriptionDialsStalled(t, name, newNode) })
	}
}

// userClientNodes make a node with a driver's New over a client made as the
// driver's package doc recommends, closed when the test ends.
var userClientNodes = map[string]func(t *testing.T, addr string) driver.Node{
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
}

// heldOnServers starts three servers, holds "k" on them through a Client of
// the named driver, and returns them with a Client over nodes that newNode
// makes, with nodeTimeout.
func heldOnServers(t *testing.T, name string, newNode func(t *testing.T, addr string) driver.Node, nodeTimeout time.Duration) ([]*redistest.Server, *redlock.Client) {
	servers := redistest.NewServers(t, 3)
	holder := openRedis(t, name, servers, redlock.WithTTL(time.Minute))
	_, err := holder.TryLock(t.Context(), "k")
	require.NoError(t, err)
	var nodes []driver.Node
	for _, s := range servers {
		nodes = append(nodes, newNode(t, s.Addr()))
	}
	c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	return servers, c
}

func closeWhileSubscriptionDialsStalled(t *testing.T, name string, newNode func(t *testing.T, addr string) driver.Node) {
	const nodeTimeout = 50 * time.Millisecond
	servers, c := heldOnServers(t, name, newNode, nodeTimeout)
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
	_, err := c.Lock(ctx, "k")
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

// Close of a Client over nodes that a driver's New made from the user's
// clients, while a waiter is subscribed on the nodes' pub/sub connections and
// the servers are stalled: Close returns after about its node timeout. The
// rueidis family's Close of a dedicated connection sends a PING and waits a
// second for its reply, which a stalled server never sends: Close took 1.05s
// with a node timeout of 50ms before the fix, whose Close of the connection
// goes on in the background (Close of a node from Open closes the connection
// under the PING first). The bound, below that second, is for a machine
// loaded enough to take 800ms where 50ms is asked.
func TestRedisCloseWithSubscriptionStalled(t *testing.T) {
	for name, newNode := range userClientNodes {
		t.Run(name, func(t *testing.T) { closeWithSubscriptionStalled(t, name, newNode) })
	}
}

func closeWithSubscriptionStalled(t *testing.T, name string, newNode func(t *testing.T, addr string) driver.Node) {
	const nodeTimeout = 50 * time.Millisecond
	servers, c := heldOnServers(t, name, newNode, nodeTimeout)
	// The waiter subscribes while the servers answer, and then waits. With
	// a node timeout of 50ms, a first pub/sub connection on a loaded
	// machine can fail; the waiter makes it again only while it listens on
	// fewer than len(nodes)-Quorum+1 nodes (2 of 3), so the wait until it
	// listened on every server failed in 5s (goredis, rueidis, valkeygo,
	// under load). Close then has the stalled pub/sub connections of at
	// least two servers to close.
	waiter := lockInBackground(t, c, "k")
	subscribedOnAtLeast(t, servers, driver.ReleaseChannel("k"), 2)
	for _, s := range servers {
		require.NoError(t, s.Pause())
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Resume()
		}
	})
	start := time.Now()
	require.NoError(t, c.Close())
	took := time.Since(start)
	t.Logf("Close took %v", took)
	require.Less(t, took, 900*time.Millisecond, "Close took %v with a node timeout of %v", took, nodeTimeout)
	select {
	case err := <-waiter:
		require.ErrorIs(t, err, redlock.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter's Lock did not return after Close")
	}
}

// subscribedOnAtLeast waits, up to 30s (a waiter whose subscriptions failed
// makes them again at growing gaps: 1s, then up to 2s, 4s...), until one
// client is subscribed to channel on at least least of servers, and fails
// the test otherwise.
func subscribedOnAtLeast(t *testing.T, servers []*redistest.Server, channel string, least int) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := 0
		for _, s := range servers {
			if numsubOn(t, s, channel) == 1 {
				n++
			}
		}
		return n >= least
	}, 30*time.Second, 10*time.Millisecond, "the waiter did not subscribe on %d of the servers", least)
}
