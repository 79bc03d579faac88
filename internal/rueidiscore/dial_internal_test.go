package rueidiscore

import (
	"context"
	"net"
	"testing"

	"github.com/redis/rueidis"
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
	conn, err := n.dial(context.Background(), a, ln.Addr().String(), &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := len(s.redials.to(ln.Addr().String())); got != 1 {
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
	conn, err := n.dial(context.Background(), a, ln.Addr().String(), &net.Dialer{}, nil) // the promoted replica's
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s.breakConns("127.0.0.1:1") // the old primary, dead, in the stale map
	if got := len(s.redials.to("")); got != 0 {
		t.Fatalf("connections left open by the probe: %d, want 0", got)
	}
}

// createdClusterNode returns a listener that accepts connections and holds
// them until the test ends, and a cluster node of Open's with the state s of
// a client whose creation attempt a is over, as a dial after the creation
// finds them.
func createdClusterNode(t *testing.T) (net.Listener, *node[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua], *state[rueidis.Client], *attempt[rueidis.Client]) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closing, close := context.WithCancel(context.Background())
	t.Cleanup(close)
	n := &node[rueidis.Client, rueidis.DedicatedClient, rueidis.RedisResult, *rueidis.Lua]{closing: closing, cluster: true, owned: true}
	s := &state[rueidis.Client]{}
	return ln, n, s, &attempt[rueidis.Client]{created: true, made: s}
}
