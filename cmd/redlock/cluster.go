package main

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// shardReport is one shard of a node that is a Redis Cluster.
type shardReport struct {
	Primary  string   `json:"primary"` // host:port
	ID       string   `json:"id"`
	Slots    int      `json:"slots"`
	Replicas []string `json:"replicas,omitempty"`
}

// clusterNodeInfo is one line of CLUSTER NODES.
type clusterNodeInfo struct {
	id, addr, master string // master: the primary's ID of a replica, else "-"
	primary          bool
	slots            []string // ranges as given: "0-5460", "5461"
}

// parseClusterNodes parses the reply of CLUSTER NODES.
func parseClusterNodes(text string) []clusterNodeInfo {
	var nodes []clusterNodeInfo
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNodeInfo{id: f[0], addr: addr, master: f[3], primary: strings.Contains(f[2], "master")}
		for _, r := range f[8:] {
			if !strings.HasPrefix(r, "[") { // "[slot->-id]": a migration in progress
				n.slots = append(n.slots, r)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// slotCount returns the number of slots in ranges such as "0-5460".
func slotCount(ranges []string) int {
	total := 0
	for _, r := range ranges {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 == nil && err2 == nil && b >= a {
			total += b - a + 1
		}
	}
	return total
}

// slotMap returns a canonical text of which primary ID serves which slots.
func slotMap(nodes []clusterNodeInfo) string {
	var parts []string
	for _, n := range nodes {
		if n.primary && len(n.slots) > 0 {
			parts = append(parts, n.id+"="+strings.Join(n.slots, ","))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// probeClusterNode checks a node that is a Redis Cluster: the node checks
// of its first reachable seed, then its shards (CLUSTER NODES), replicas
// that a failover could promote, slots that no shard serves, and whether
// the primaries agree on the slot map.
func probeClusterNode(ctx context.Context, a redisaddr.Node, o doctorOptions) *nodeReport {
	var n *nodeReport
	at := func(hostPort string) redisaddr.Addr {
		sa := a.Addr
		if host, port, err := net.SplitHostPort(hostPort); err == nil {
			sa.Host, sa.Port = host, port
		}
		return sa
	}
	for _, seed := range a.Seeds {
		if n = probeNode(ctx, at(seed), o); n.Reachable {
			break
		}
	}
	n.Addr = a.String()
	// The node is meant to be a cluster: drop the warning for a
	// cluster-enabled server given as a single one.
	n.Checks = slices.DeleteFunc(n.Checks, func(c check) bool { return c.Name == "cluster" })
	n.Status = statusOK
	for _, c := range n.Checks {
		n.Status = worse(n.Status, c.Status)
	}
	if !n.Reachable {
		return n
	}
	view := func(hostPort string) ([]clusterNodeInfo, error) {
		c, err := keystatus.NewClient(at(hostPort), o.timeout) // TLS for rediss://
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		text, err := c.Do(cctx, "CLUSTER", "NODES").Text()
		if err != nil {
			return nil, err
		}
		return parseClusterNodes(text), nil
	}
	nodes, err := view(n.hostPort)
	if err != nil {
		n.add("cluster", statusFail, "CLUSTER NODES failed: %v: is it a cluster-enabled server?", err)
		return n
	}
	byID := make(map[string]*shardReport)
	assigned := 0
	for _, cn := range nodes {
		n.clusterIDs = append(n.clusterIDs, cn.id)
		if cn.primary {
			n.Shards = append(n.Shards, shardReport{Primary: cn.addr, ID: cn.id, Slots: slotCount(cn.slots)})
			assigned += slotCount(cn.slots)
		}
	}
	for i := range n.Shards {
		byID[n.Shards[i].ID] = &n.Shards[i]
	}
	replicas := 0
	for _, cn := range nodes {
		if s := byID[cn.master]; !cn.primary && s != nil {
			s.Replicas = append(s.Replicas, cn.addr)
			replicas++
		}
	}
	n.add("shards", statusOK, "a Redis Cluster of %d shard(s) serving %d of 16384 slots", len(n.Shards), assigned)
	if assigned < 16384 {
		n.add("slots", statusFail, "%d slot(s) have no shard: locks on their keys fail on this node", 16384-assigned)
	}
	if replicas > 0 {
		n.add("replicas", statusWarn, "%d replica(s) could be promoted by a failover, which loses the locks their primary held (replication is asynchronous); count on each shard's primary only, and delay a promoted replica's service by the largest TTL", replicas)
	}
	want := slotMap(nodes)
	var disagree []string
	for _, s := range n.Shards {
		other, err := view(s.Primary)
		if err != nil {
			n.add("slot map", statusWarn, "CLUSTER NODES at %s failed: %v", s.Primary, err)
			continue
		}
		if slotMap(other) != want {
			disagree = append(disagree, s.Primary)
		}
	}
	if len(disagree) > 0 {
		n.add("slot map", statusWarn, "%s disagree(s) with %s on the slot map: a migration or failover in progress, or a split cluster; commands are redirected meanwhile", strings.Join(disagree, ", "), n.hostPort)
	} else {
		n.add("slot map", statusOK, "the %d primaries agree on the slot map", len(n.Shards))
	}
	return n
}
