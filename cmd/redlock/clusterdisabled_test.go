//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestRunClusterAddressOfPlainServers: a node given as a Redis Cluster
// (?cluster=true) whose server is not cluster-enabled fails every call
// ("ERR This instance has cluster support disabled"), which no retry fixes:
// cluster-enabled is set in redis.conf and needs a restart. run now fails at
// once with 1 and says so, as for servers without EVAL. Before, the error
// counted as a passing failure: run --wait 10s waited its 10s and exited 69
// ("too many nodes failed"), and without --wait (an init container's lock,
// say) it waited for ever.
func TestRunClusterAddressOfPlainServers(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 3)
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = "redis://" + s.Addr() + "?cluster=true"
	}
	for _, driver := range []string{"goredis", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", driver, "--nodes", strings.Join(addrs, ","), "--wait", "10s", "k", "--", "true")
		if r.code != exitFailure || !strings.Contains(r.stderr, "cluster support disabled, which retrying cannot fix") {
			t.Errorf("%s: run on cluster addresses of servers that are not cluster-enabled: want exit 1 and the permanent error, got %v", driver, r)
		}
	}
}

// TestRunOneServerAddressesOfClusterServers: servers of Redis Clusters of two
// shards given as one server each (no ?cluster=true), beside a plain server:
// run locks a key of the slots those servers serve, and for a key of the
// other shard's slots, which both answer with MOVED that no node of one
// server follows, fails at once with 1 and says that the servers are a
// cluster's and how to give them, whatever the driver. Before, MOVED counted
// as a passing failure: run --wait 10s waited its 10s and exited 69 ("too
// many nodes failed").
func TestRunOneServerAddressesOfClusterServers(t *testing.T) {
	t.Parallel()
	cls := redistest.NewClusters(t, 2, 2)
	plain := redistest.NewServer(t)
	addrs := strings.Join([]string{cls[0].Shards()[0].Primary().Addr(), cls[1].Shards()[0].Primary().Addr(), plain.Addr()}, ",")
	// keyOn returns a key whose slot shard i of both clusters serves.
	keyOn := func(i int, prefix string) string {
		for n := range 100 {
			key := cls[0].KeyOn(cls[0].Shards()[i], prefix+strings.Repeat("x", n))
			if cls[1].SlotShard(redistest.KeySlot(key)) == cls[1].Shards()[i] {
				return key
			}
		}
		t.Fatalf("no key of a slot that shard %d of both clusters serve", i)
		return ""
	}
	own, other := keyOn(0, "own-"), keyOn(1, "other-")
	for _, driver := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", driver, "--nodes", addrs, "--wait", "10s", own, "--", "true")
		if r.code != exitOK {
			t.Errorf("%s: run on a key of the servers' own slots: want exit 0, got %v", driver, r)
		}
		r = invoke(t, "", "run", "--driver", driver, "--nodes", addrs, "--wait", "10s", other, "--", "true")
		t.Logf("%s: %s", driver, r.stderr)
		if r.code != exitFailure || !strings.Contains(r.stderr, "2 answered MOVED, which retrying cannot fix") ||
			!strings.Contains(r.stderr, "the server is a node of a Redis Cluster") || !strings.Contains(r.stderr, "?cluster=true") {
			t.Errorf("%s: run on a key of another shard's slots: want exit 1 and the permanent error, got %v", driver, r)
		}
	}
}
