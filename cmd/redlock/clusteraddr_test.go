package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/internal/redisaddr"
)

// ipv6ClusterNodes is CLUSTER NODES of a cluster bound to ::1 (redis-server
// 7.0.15, two primaries and a replica with cluster-announce-hostname), as
// the server at [::1]:23791 wrote it: IPv6 addresses have no brackets.
// redistest binds 127.0.0.1 only, so no test starts such a cluster.
const ipv6ClusterNodes = `77b11c0587644e0d04b74ebdfe94561f2dd7c58d ::1:23792@33792 master - 0 1796116782820 2 connected 8192-16383
961f21c77403a601ef1ef983d668e4706457ed04 ::1:23793@33793,replica-host slave 77b11c0587644e0d04b74ebdfe94561f2dd7c58d 0 1796116783824 2 connected
569136cb95d0eff0082f3e8c969436ea64b11be2 ::1:23791@33791 myself,master - 0 1796116780000 1 connected 0-8191
`

// The addresses of CLUSTER NODES on IPv6 are those of the shards, in the
// form net.SplitHostPort takes: not the seed's, to which seedAddr once fell
// back, so that doctor checked the seed once per primary and status read
// every key on the seed (MOVED).
func TestParseClusterNodesIPv6(t *testing.T) {
	nodes, err := parseClusterNodes(ipv6ClusterNodes, "[::1]:23791")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"77b11c0587644e0d04b74ebdfe94561f2dd7c58d": "[::1]:23792",
		"961f21c77403a601ef1ef983d668e4706457ed04": "[::1]:23793",
		"569136cb95d0eff0082f3e8c969436ea64b11be2": "[::1]:23791",
	}
	if len(nodes) != len(want) {
		t.Fatalf("parseClusterNodes: %d nodes, want %d: %+v", len(nodes), len(want), nodes)
	}
	a, err := redisaddr.ParseNode("redis://:pw@[::1]:23791?cluster=true")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.addr != want[n.id] {
			t.Errorf("node %s: addr %q, want %q", n.id, n.addr, want[n.id])
		}
		sa, err := seedAddr(a, n.addr)
		if err != nil || sa.HostPort() != want[n.id] || sa.Password != "pw" {
			t.Errorf("seedAddr(%q) = %s, %v; want %s with the node's password", n.addr, sa.HostPort(), err, want[n.id])
		}
	}
}

// clusterAddr reads the addresses of CLUSTER NODES and of MOVED and ASK:
// IPv6 without brackets, an empty host (the server that wrote it), and
// fails for what is not ip:port rather than guess.
func TestClusterAddr(t *testing.T) {
	for _, tc := range []struct{ addr, from, want string }{
		{"127.0.0.1:7001", "127.0.0.1:7000", "127.0.0.1:7001"},
		{"::1:23792", "[::1]:23791", "[::1]:23792"}, // MOVED 12182 ::1:23792
		{"fe80::1:7001", "10.0.0.1:7000", "[fe80::1]:7001"},
		{"[::1]:7001", "[::1]:7000", "[::1]:7001"},
		{"redis-0.example:7001", "[::1]:7000", "redis-0.example:7001"},
		{":7001", "[::1]:7000", "[::1]:7001"}, // a server that does not know its own address
		{":7001", "10.0.0.1:7000", "10.0.0.1:7001"},
	} {
		if got, err := clusterAddr(tc.addr, tc.from); err != nil || got != tc.want {
			t.Errorf("clusterAddr(%q, %q) = %q, %v; want %q", tc.addr, tc.from, got, err, tc.want)
		}
	}
	for _, addr := range []string{"", "::1", "127.0.0.1", "127.0.0.1:port", "127.0.0.1:70000", "[::1:7001", "::1]:7001"} {
		if got, err := clusterAddr(addr, "[::1]:7000"); err == nil {
			t.Errorf("clusterAddr(%q) = %q, want an error", addr, got)
		}
	}
	if _, err := parseClusterNodes("b859 ::1@33791 myself,master - 0 0 1 connected 0-16383\n", "[::1]:23791"); err == nil || !strings.Contains(err.Error(), "b859") {
		t.Errorf("parseClusterNodes of an address without a port: %v, want an error naming the node", err)
	}
	if _, err := seedAddr(redisaddr.Node{}, "::1:23792"); err == nil {
		t.Errorf("seedAddr of an address that is not host:port: no error")
	}
}
