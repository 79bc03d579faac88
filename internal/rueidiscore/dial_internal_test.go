package rueidiscore

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// TestClusterRedialDuringDedicateTracked: a cluster client's dial after its
// creation with a context that has no Done channel (the library's refresh of
// its slot map, getClusterSlots, dials so through mux.Dial/Version) while a
// Dedicate of a release subscription is in flight must still be tracked in
// the state's redials, so that the stall probe of a call to that shard can
// close it (see stalled). It was taken for the hub's connection and only
// closed at the node's Close.
func TestClusterRedialDuringDedicateTracked(t *testing.T) {
	ln, n, s, a := createdClusterNode(t)
	n.dedicating = 1 // a subscription's Dedicate, on another goroutine
	conn, err := n.dial(context.Background(), a, ln.Addr(), &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := len(s.redials.to(ln.Addr())); got != 1 {
		t.Fatalf("redials to %s: %d, want 1 (the stall probe cannot close the connection)", ln.Addr(), got)
	}
	conn.Close()
	if got := len(s.redials.to("")); got != 0 {
		t.Fatalf("redials after Close: %d, want 0", got)
	}
}

// TestClusterStallProbeStaleSlotMap: the stall probe of a call whose slot the
// node's map gives to a primary the client has no connection to (the map was
// read before a failover, and only the creation and the release
// subscriptions read it) closed nothing, and the call's library goroutines
// waited on the promoted replica's connection for the library's timeouts.
func TestClusterStallProbeStaleSlotMap(t *testing.T) {
	ln, n, s, a := createdClusterNode(t)
	conn, err := n.dial(context.Background(), a, ln.Addr(), &net.Dialer{}, nil) // the promoted replica's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s.breakConns("127.0.0.1:1") // the old primary, dead, in the stale map
	if got := len(s.redials.to("")); got != 0 {
		t.Fatalf("connections left open by the probe: %d, want 0", got)
	}
}

// createdClusterNode returns a server that accepts connections and never
// answers (redistest.Silent) until the test ends, and a cluster node of Open's with the state s of
// a client whose creation attempt a is over, as a dial after the creation
// finds them.
func createdClusterNode(t *testing.T) (*redistest.Silent, *node[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua], *state[rueidis.Client], *attempt[rueidis.Client]) {
	t.Helper()
	ln := redistest.NewSilent(t)
	closing, close := context.WithCancel(context.Background())
	t.Cleanup(close)
	n := &node[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua]{closing: closing, cluster: true, owned: true}
	s := &state[rueidis.Client]{}
	return ln, n, s, &attempt[rueidis.Client]{created: true, made: s}
}

// TestClusterStallProbePerShardBounded: the stall probes of calls to two
// shards that both stopped answering, while the library holds every call
// (as it holds a cluster client's calls while it dials a connection again,
// whatever their contexts), each break their shard's connections within
// probeTimeout and end. One probe ran at a time per client, so the second
// shard's stall got none, and the probe waited as long as the library held
// it, breaking nothing meanwhile.
func TestClusterStallProbePerShardBounded(t *testing.T) {
	ln, n, s, a := createdClusterNode(t)
	ln2 := redistest.NewSilent(t)
	held := make(chan struct{})
	defer close(held)
	var probes atomic.Int32
	n.lib = &Library[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua]{
		Exec: func(context.Context, rueidis.Client, *rueidis.Lua, Keys, Args) rueidis.RedisResult {
			probes.Add(1)
			<-held // whatever the context
			return rueidis.RedisResult{}
		},
		IsNil: rueidis.IsRedisNil,
	}
	addrs := []string{ln.Addr(), ln2.Addr()}
	n.slots.set([]slotRange{{0, 8191, addrs[0]}, {8192, driver.Slots - 1, addrs[1]}})
	n.cur.Store(s)
	var keys []string
	for i := 0; len(keys) < 2; i++ {
		if k := fmt.Sprintf("key-%d", i); driver.HashSlot(k)/8192 == len(keys) {
			keys = append(keys, k)
		}
	}
	for _, addr := range addrs {
		conn, err := n.dial(context.Background(), a, addr, &net.Dialer{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}
	start := time.Now()
	n.stalled(s.client, keys[0])
	n.stalled(s.client, keys[1])
	n.stalled(s.client, keys[0]) // a probe of that shard runs: none more
	for _, addr := range addrs {
		for len(s.redials.to(addr)) > 0 {
			if time.Since(start) > probeTimeout+2*time.Second {
				t.Fatalf("the connection to %s is still open %v after its shard's stall (probes started: %d)", addr, time.Since(start).Round(time.Millisecond), probes.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for running := true; running; {
		running = false
		s.probing.Range(func(any, any) bool { running = true; return false })
		if running && time.Since(start) > probeTimeout+2*time.Second {
			t.Fatal("a probe still runs while the library holds its call")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := probes.Load(); got != 2 {
		t.Fatalf("probes: %d, want 2 (one per shard)", got)
	}
}
