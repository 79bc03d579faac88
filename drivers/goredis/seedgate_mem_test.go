package goredis

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// registered returns how many clients the registry of gates holds, and how
// many gates are live over them.
func registered() (clients, gates int) {
	gated.mu.Lock()
	defer gated.mu.Unlock()
	for _, e := range gated.m {
		clients++
		gates += len(e.live())
	}
	return clients, gates
}

// Nodes of New made, used (their gate installed: a seed is down) and closed
// 100 times over one shared cluster client leave one registry entry and no
// live gate; 20 cluster clients made, gated and dropped leave no entry once
// collected (runtime.AddCleanup): the registry does not grow.
func TestSeedGatesNoGrowth(t *testing.T) {
	c := redistest.NewCluster(t, 1)
	down := redistest.DownAddrs(t, 1)[0]
	dial := refusingDial(down)
	newClient := func() *redis.ClusterClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: append(c.Seeds(), down), Dialer: dial,
			ContextTimeoutEnabled: true, MaxRetries: -1})
	}
	round := func(cc *redis.ClusterClient, i int) {
		n := New(cc).(*node)
		_, err := n.SetNX(t.Context(), "k", "v", time.Minute)
		require.NoError(t, err, "round %d", i)
		require.True(t, n.gate.installed, "round %d: the down seed left no gate", i)
		require.NoError(t, n.Close())
	}
	clients0, gates0 := registered()

	cc := newClient()
	for i := range 100 { // one gate left live per node would show as 100
		round(cc, i)
	}
	clients, gates := registered()
	// The clients of earlier tests (or runs, with -count) may be collected
	// meanwhile, their entries gone: cc has its entry, and the registry has
	// grown by no more than it.
	gated.mu.Lock()
	_, ok := gated.m[weak.Make(cc)]
	gated.mu.Unlock()
	require.True(t, ok, "no registry entry for the client of 100 nodes")
	require.LessOrEqual(t, clients, clients0+1, "clients in the registry after 100 nodes over one")
	require.Equal(t, gates0, gates, "live gates after 100 nodes closed")
	require.NoError(t, cc.Close())
	clients1 := clients // the client above, which read a map, among them

	// The gate installed by the node's check alone (checkSeeds), with no
	// slot map read: go-redis keeps a client that read one alive for a
	// minute (a timer of its map holds its nodes, whose OnNewNode
	// functions hold the client).
	for i := range 20 {
		cc := newClient()
		n := New(cc).(*node)
		require.NoError(t, n.checkSeeds(t.Context()), "client %d", i)
		require.True(t, n.gate.installed, "client %d: the down seed left no gate", i)
		require.NoError(t, n.Close())
		require.NoError(t, cc.Close())
	}
	require.Eventually(t, func() bool {
		runtime.GC()
		clients, _ := registered()
		return clients <= clients1
	}, 30*time.Second, 50*time.Millisecond, "the registry keeps clients that were collected")
}

// Nodes of New made, gated and closed concurrently over one shared cluster
// client, while the client reloads its map (dials of its seeds, the down
// one among them, through the gates of the nodes live then): every node
// locks and gets its gate, and once all are closed no gate is live (with -race: no data race between install,
// admit and close).
func TestSeedGatesConcurrentNodes(t *testing.T) {
	c := redistest.NewCluster(t, 1)
	down := redistest.DownAddrs(t, 1)[0]
	dial := refusingDial(down)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: append(c.Seeds(), down), Dialer: dial,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	_, gates0 := registered()
	stop := make(chan struct{})
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				cc.ReloadState(context.Background())
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				n := New(cc).(*node)
				_, err := n.SetNX(t.Context(), fmt.Sprintf("k%d-%d", w, i), "v", time.Minute)
				assert.NoError(t, err, "worker %d round %d", w, i)
				assert.True(t, n.gate.installed, "worker %d round %d: the down seed left no gate", w, i)
				assert.NoError(t, n.Close())
			}
		})
	}
	wg.Wait()
	close(stop)
	<-reloaded
	_, gates := registered()
	require.Equal(t, gates0, gates, "live gates once every node is closed")
}

// refusingDial is a cluster client's Dialer that refuses down, as a server
// that is not running does, and dials every other address.
func refusingDial(down string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == down {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}
