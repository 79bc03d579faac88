//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// A cluster on ::1, whose CLUSTER NODES and MOVED replies write IPv6
// addresses without brackets: doctor checks each primary by its own address,
// and status reads a held key on the primary that serves its slot, beside
// single servers on ::1 and on 127.0.0.1.
func TestClusterIPv6(t *testing.T) {
	redistest.SkipWithoutIPv6(t)
	t.Parallel()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1), redistest.WithServerOptions(redistest.WithIPv6()))
	p := c.Shards()[1].Primary() // the first seed is shard 0's primary
	for _, kv := range [][2]string{{"maxmemory", "100mb"}, {"maxmemory-policy", "allkeys-lru"}} {
		if _, err := p.Do(t.Context(), "CONFIG", "SET", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	rep, r := doctorJSON(t, c.URL())
	ch, ok := findCheck(rep.Nodes[0].Checks, "eviction", statusFail)
	if !ok || r.code != exitFailure {
		t.Fatalf("shard 1's primary on ::1 evicts: want a failed eviction check and exit %d; got %+v (exit %d)", exitFailure, rep.Nodes[0].Checks, r.code)
	}
	if !strings.Contains(ch.Message, p.Addr()) {
		t.Errorf("the eviction check does not name the evicting primary %s: %q", p.Addr(), ch.Message)
	}
	if _, err := p.Do(t.Context(), "CONFIG", "SET", "maxmemory-policy", "noeviction"); err != nil {
		t.Fatal(err)
	}

	single6, single4 := redistest.NewServer(t, redistest.WithIPv6()), redistest.NewServer(t)
	key := keyOnShard(c, "app:", 1)
	addrs := strings.Join([]string{c.URL(), single6.Addr(), single4.Addr()}, ",")
	holder, h := startHold(t, "--nodes", addrs, "--prefix", "app:", "--fencing", "--ttl", "30s", key)
	defer holder.term()
	r = invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "--json", key)
	var st statusReport
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
		t.Fatalf("status --json on a cluster and servers on ::1: %v\n%v", err, r)
	}
	held := st.Keys[0]
	if held.State != keyHeld || held.Fence == nil || *held.Fence != h.Token || held.Answered != 3 {
		t.Errorf("the held key: %+v, want held with fence %d, answered by all 3 nodes", held, h.Token)
	}
	if n := held.Nodes[0]; n.Error != "" || n.Shard != p.Addr() {
		t.Errorf("the held key on the cluster node: %+v, want it read on shard 1's primary %s", n, p.Addr())
	}
}
