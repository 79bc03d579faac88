package goredis

import (
	"context"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// A program that makes a node of New per request over one shared
// *redis.ClusterClient, one of whose seeds is down for good, adds to that
// client one function (OnNewNode, which go-redis cannot remove) in all, not
// one per node: before, each node's first use added one, and 50 rounds of
// New, first call and Close left 50 functions on the client. The gate
// still works after the rounds: a node client that the client makes then
// asks the down seed before it connects to it.
func TestSeedGateOneFunctionPerClient(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	down := redistest.DownAddrs(t, 1)[0]
	var mu sync.Mutex
	dials := map[string]int{}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials[addr]++
		mu.Unlock()
		if addr == down {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	added := map[*redis.ClusterClient]int{}
	orig := onNewNode
	onNewNode = func(cc *redis.ClusterClient, fn func(*redis.Client)) {
		mu.Lock()
		added[cc]++
		mu.Unlock()
		orig(cc, fn)
	}
	t.Cleanup(func() { onNewNode = orig })

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: append(c.Seeds(), down), Dialer: dial,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	const rounds = 50
	for i := range rounds {
		n := New(cc).(*node)
		_, err := n.SetNX(t.Context(), "k", "v", time.Minute)
		require.NoError(t, err, "round %d", i)
		require.True(t, n.gate.installed, "round %d: the down seed left no gate", i)
		require.NoError(t, n.Close())
	}
	mu.Lock()
	got := added[cc]
	mu.Unlock()
	require.Equal(t, 1, got, "functions added to the caller's client after %d rounds of New over it", rounds)

	// A live node's gate still holds a node client that the client makes
	// now (called here through the one function's gates, as go-redis
	// calls it): its dial of the down seed asks the seed first, which
	// refuses, and its own dialer is never called.
	n := New(cc).(*node)
	t.Cleanup(func() { n.Close() })
	_, err := n.SetNX(t.Context(), "k2", "v", time.Minute)
	require.NoError(t, err)
	require.Equal(t, []*seedGate{n.gate}, n.gate.of.live(), "the live gates of the client")
	var own int
	rdb := redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			own++
			return dial(ctx, network, addr)
		}})
	t.Cleanup(func() { rdb.Close() })
	n.gate.of.newNode(rdb)
	mu.Lock()
	before := dials[down]
	mu.Unlock()
	require.Error(t, rdb.Ping(t.Context()).Err())
	mu.Lock()
	asked := dials[down] - before
	mu.Unlock()
	require.Equal(t, 0, own, "the node client connected to a seed that did not answer")
	require.Positive(t, asked, "the gate did not ask the seed")
	require.NoError(t, n.Close())
	require.Empty(t, n.gate.of.live(), "a closed node's gate is live")
}
