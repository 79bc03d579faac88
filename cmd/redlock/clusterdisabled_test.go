//go:build unix

package main

import (
	"strings"
	"testing"
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
