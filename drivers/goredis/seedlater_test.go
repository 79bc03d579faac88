package goredis_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// gate is a caller's dialer that makes addresses unreachable (refused, and
// their connections closed), as a partition between the client and them.
type gate struct {
	mu    sync.Mutex
	down  map[string]bool
	conns map[string][]net.Conn
}

func (g *gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.down[addr] {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		g.conns[addr] = append(g.conns[addr], c)
	}
	return c, err
}

func (g *gate) set(addr string, down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down[addr] = down
	if down {
		for _, c := range g.conns[addr] {
			c.Close()
		}
		g.conns[addr] = nil
	}
}

// A node of New over a *redis.ClusterClient of the caller's whose seeds
// are of two clusters, the second's seed down when the node was first used:
// the check vouched for the first seed alone. The second comes up, and the
// client loses the first cluster's nodes (a partition): go-redis then reads
// its map from its seeds (clusterNodes.Addrs falls back to them once no
// node of the map answers), the second among them. The node must not lock
// on the second cluster while a Client over the first cluster holds the key:
// it did when the node did not gate the caller's client (its dials are the
// caller's dialer's); now the dial of the seed asks it first (seedGate),
// and the node is refused. The gate is installed before the Client's
// question of the node's identity, which made the client's node clients
// first (the seed's among them), ungated, in 2 of 3 runs before.
func TestNewClusterClientSeedDownAtFirstUse(t *testing.T) {
	t.Parallel()
	seedDownAtFirstUse(t, nil)
}

// seedDownAtFirstUse is TestNewClusterClientSeedDownAtFirstUse's scenario;
// first, when not nil, is the node's first use before its Client's.
func seedDownAtFirstUse(t *testing.T, first func(t *testing.T, n driver.Node)) {
	a := redistest.NewCluster(t, 1)
	b := redistest.NewCluster(t, 1)
	sa, sb := a.Seeds()[0], b.Seeds()[0]
	g := &gate{down: map[string]bool{sb: true}, conns: map[string][]net.Conn{}}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{sa, sb}, Dialer: g.dial,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	n := goredis.New(cc)
	if first != nil {
		first(t, n)
	}
	c1, err := redlock.New([]driver.Node{n}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c1.Close() })
	l, err := c1.TryLock(t.Context(), "warm")
	require.NoError(t, err, "seeds of two clusters, the second down: the check vouched for the first")
	require.NoError(t, l.Unlock(t.Context()))

	hc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: a.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { hc.Close() })
	// A node timeout that a loaded machine does not exhaust (the first
	// call reads the slot map and dials): the holder only takes the key.
	c2, err := redlock.New([]driver.Node{goredis.New(hc)}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c2.Close() })
	const key = "seed-later"
	held, err := c2.TryLock(t.Context(), key)
	require.NoError(t, err)
	defer held.Unlock(context.Background())

	g.set(sb, false)
	g.set(sa, true)
	_, port, _ := net.SplitHostPort(sa)
	g.set(":"+port, true) // as CLUSTER SLOTS names it, without announce-ip
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		_, last = c1.TryLock(ctx, key)
		require.Error(t, last, "a lock held on the first cluster was granted on the second, read from the seed not checked")
		if errors.Is(last, driver.ErrSeedsOfTwoClusters) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("last error: %v", last)
}
