package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A node of New per request over one shared *redis.ClusterClient whose
// seeds are of two clusters, the second's seed (sb) down: go-redis makes a
// node client for sb when it reloads its map from its seeds, in its own
// goroutine (ReloadState, which a node's failed command starts, or the
// reload of a map older than ClusterStateReloadInterval), which may run
// after the request's node was closed, when no gate is live. That node
// client must be gated once a later request's node has a gate: sb comes
// up, the client loses the first cluster, and it reads its map from sb on
// the node client it has. Before, a node client made while no gate was
// live got no hook, and the later node locked on the second cluster while
// a Client over the first held the key, in about half of the rounds (when
// the first request's reload had not made sb's node client already).
func TestNewClusterClientSeedNodeClientMadeBetweenRequests(t *testing.T) {
	t.Parallel()
	a := redistest.NewCluster(t, 1)
	b := redistest.NewCluster(t, 1)
	sa, sb := a.Seeds()[0], b.Seeds()[0]
	_, port, _ := net.SplitHostPort(sa)
	hc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: a.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { hc.Close() })
	// A node timeout that a loaded machine does not exhaust (the first
	// call reads the slot map and dials): the holder only takes the keys.
	holder, err := redlock.New([]driver.Node{goredis.New(hc)}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { holder.Close() })
	newClient := func(n driver.Node) *redlock.Client {
		c, err := redlock.New([]driver.Node{n}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		require.NoError(t, err)
		return c
	}
	partition := func(g *gate, down bool) {
		g.set(sa, down)
		g.set(":"+port, down) // as CLUSTER SLOTS names it, without announce-ip
	}
	const rounds = 10
	for i := range rounds {
		g := &gate{down: map[string]bool{sb: true}, conns: map[string][]net.Conn{}}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{sa, sb}, Dialer: g.dial,
			ContextTimeoutEnabled: true, MaxRetries: -1})

		// Request 1: the node locks (its gate asks sb, still down), and
		// the request ends, closing the node. Then the first cluster is
		// cut off, and the client's reload (which go-redis runs in its
		// own goroutine, started by the request's last command) runs with
		// no node, hence no gate, live: it tries every address it knows,
		// sb among them.
		c1 := newClient(goredis.New(cc))
		l, err := c1.TryLock(t.Context(), fmt.Sprintf("warm-%d", i))
		require.NoError(t, err, "round %d", i)
		require.NoError(t, l.Unlock(t.Context()))
		require.NoError(t, c1.Close())
		partition(g, true)
		cc.ReloadState(t.Context())
		time.Sleep(300 * time.Millisecond)
		cc.ReloadState(t.Context())
		time.Sleep(300 * time.Millisecond)

		// Request 2: the first cluster is back; the node locks, its
		// check vouching for sa alone (sb still down), which gates sb.
		partition(g, false)
		c3 := newClient(goredis.New(cc))
		l, err = c3.TryLock(t.Context(), fmt.Sprintf("warm2-%d", i))
		require.NoError(t, err, "round %d", i)
		require.NoError(t, l.Unlock(t.Context()))

		key := fmt.Sprintf("between-%d", i)
		held, err := holder.TryLock(t.Context(), key)
		require.NoError(t, err)
		g.set(sb, false)
		partition(g, true)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		for ctx.Err() == nil {
			_, err = c3.TryLock(ctx, key)
			require.Error(t, err, "round %d: a lock held on the first cluster was granted on the second, read from sb on a node client made while no gate was live", i)
			if errors.Is(err, driver.ErrSeedsOfTwoClusters) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		require.NoError(t, held.Unlock(context.Background()))
		require.NoError(t, c3.Close())
		require.NoError(t, cc.Close())
	}
}
