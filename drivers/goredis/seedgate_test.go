package goredis

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// The seeds' gate on a *redis.ClusterClient of the caller's (seedGate) is
// installed only when the first check left a seed unvouched, and is inert
// (holds no Checker; node clients' hooks no longer ask it) once every
// seed agreed or the node is closed.
func TestSeedGateInstalledOnlyWhenNeeded(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	seeds := c.Seeds()
	var mu sync.Mutex
	down := map[string]bool{}
	var dials atomic.Int32 // of the second seed
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		refused := down[addr]
		mu.Unlock()
		if addr == seeds[1] {
			dials.Add(1)
		}
		if refused {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	newNode := func() *node {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Dialer: dial,
			ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { cc.Close() })
		n := New(cc).(*node)
		t.Cleanup(func() { n.Close() })
		_, err := n.SetNX(t.Context(), "k", "v", time.Minute)
		require.NoError(t, err)
		return n
	}

	// Every seed answered: nothing is installed.
	n := newNode()
	require.False(t, n.gate.installed, "every seed agreed at the first check: the gate was installed")
	require.Nil(t, n.gate.seeds.Load())

	// The second seed down at first use: the gate is installed; a dial of
	// it asks it first (one question, then the connection), and once it
	// agreed the gate is inert: its next dial is the dialer's alone.
	mu.Lock()
	down[seeds[1]] = true
	mu.Unlock()
	n = newNode()
	require.True(t, n.gate.installed, "a seed unvouched at the first check: no gate")
	require.NotNil(t, n.gate.seeds.Load())
	require.Error(t, n.gate.admit(t.Context(), seeds[1]), "a seed still down was admitted")
	require.NotNil(t, n.gate.seeds.Load(), "inert while a seed is unvouched")
	mu.Lock()
	down[seeds[1]] = false
	mu.Unlock()
	before := dials.Load()
	require.NoError(t, n.gate.admit(t.Context(), seeds[1]))
	require.Equal(t, before+1, dials.Load(), "the seed not asked before it was admitted")
	require.Nil(t, n.gate.seeds.Load(), "every seed agreed: the gate holds its Checker still")
	before = dials.Load()
	require.NoError(t, n.gate.admit(t.Context(), seeds[1]))
	require.Equal(t, before, dials.Load(), "an inert gate asked the seed")

	// Closed: inert, and never installed after.
	mu.Lock()
	down[seeds[1]] = true
	mu.Unlock()
	n = newNode()
	require.NotNil(t, n.gate.seeds.Load())
	require.NoError(t, n.Close())
	require.Nil(t, n.gate.seeds.Load(), "a closed node's gate holds its Checker")
	n.gate.install(n.shards.client, n.seeds)
	require.Nil(t, n.gate.seeds.Load(), "a closed node's gate was installed")
}
