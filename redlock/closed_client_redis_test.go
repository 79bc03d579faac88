package redlock_test

import (
	"context"
	"testing"
	"time"

	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// closableNodes make a node with a driver's New over a client of the user's,
// and return it with the function that closes that client, as its user may
// while the Client still uses the node.
var closableNodes = map[string]func(t *testing.T, addr string) (driver.Node, func()){
	"goredis": func(t *testing.T, addr string) (driver.Node, func()) {
		rc := goredislib.NewClient(&goredislib.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
		return goredis.New(rc), func() { rc.Close() }
	},
	"redigo": func(t *testing.T, addr string) (driver.Node, func()) {
		p := &redigolib.Pool{DialContext: func(ctx context.Context) (redigolib.Conn, error) {
			return redigolib.DialContext(ctx, "tcp", addr)
		}}
		return redigo.New(p), func() { p.Close() }
	},
	"rueidis": func(t *testing.T, addr string) (driver.Node, func()) {
		rc, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{addr},
			ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		return rueidis.New(rc), rc.Close
	},
	"valkeygo": func(t *testing.T, addr string) (driver.Node, func()) {
		vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr},
			ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		return valkeygo.New(vc), vc.Close
	},
}

// Lock and Do over nodes of New whose clients the user closed stop at once,
// with ErrClosed, rather than retrying until their context ends: a closed
// go-redis, rueidis or valkey-go client or redigo pool never opens again.
// Before, Lock waited for its context (30s here).
func TestRedisLockOverClosedUserClients(t *testing.T) {
	for name, newNode := range closableNodes {
		t.Run(name, func(t *testing.T) {
			var (
				nodes   []driver.Node
				closers []func()
			)
			for _, s := range redistest.NewServers(t, 3) {
				n, closeClient := newNode(t, s.Addr())
				nodes, closers = append(nodes, n), append(closers, closeClient)
			}
			requireStopsOnceClosed(t, nodes, func() {
				for _, closeClient := range closers {
					closeClient()
				}
			})
		})
	}
}

// requireStopsOnceClosed makes a Client over nodes, checks that it locks,
// closes the clients under the nodes with closeClients, and checks that Lock
// and Do then stop at once (requireStopsOnClosedNodes).
//
// The Client's node timeout is 2s, not the default 200ms: its first TryLock
// connects, and over a cluster reads the slot map first; on a loaded machine
// that took longer than 200ms (TestRedisLockOverClosedRingAndCluster, rueidis
// cluster: "SET NX: slot 7629: context deadline exceeded"). On closed
// clients, the nodes answer ErrClosed without waiting for it.
func requireStopsOnceClosed(t *testing.T, nodes []driver.Node, closeClients func()) {
	t.Helper()
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	l, err := c.TryLock(t.Context(), "k") // the clients work
	require.NoError(t, err)
	require.NoError(t, l.Unlock(t.Context()))
	closeClients()
	requireStopsOnClosedNodes(t, c)
}
