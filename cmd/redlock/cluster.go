package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
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
	// moving are the slots the server is migrating or importing, as
	// given: "[42->-id]", "[42-<-id]" (a server lists only its own).
	moving []string
}

// parseClusterNodes parses the reply of CLUSTER NODES given by the server
// at from. Every address is made host:port as net.JoinHostPort writes it
// (see clusterAddr); an address that cannot be parsed fails the whole
// reply, rather than send its shard's commands to another server.
func parseClusterNodes(text, from string) ([]clusterNodeInfo, error) {
	var nodes []clusterNodeInfo
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		// "ip:port@cport", with ",hostname" and more after cport since 7.0.
		raw, _, _ := strings.Cut(f[1], "@")
		addr, err := clusterAddr(raw, from)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES at %s: node %s: %w", from, f[0], err)
		}
		n := clusterNodeInfo{id: f[0], addr: addr, master: f[3], primary: strings.Contains(f[2], "master")}
		for _, r := range f[8:] {
			if !strings.HasPrefix(r, "[") { // "[slot->-id]": a migration in progress
				n.slots = append(n.slots, r)
			} else {
				n.moving = append(n.moving, r)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// clusterAddr returns as host:port, in the form of net.JoinHostPort, an
// address that a cluster's server wrote in CLUSTER NODES or in a MOVED or
// ASK redirection: "ip:port", where an IPv6 ip has no brackets
// ("::1:7001"), so the port is after the last colon. An empty ip (a server
// that does not know its own yet) is the host of from, the server that
// wrote the address.
func clusterAddr(addr, from string) (string, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", fmt.Errorf("address %q has no port", addr)
	}
	host, port := addr[:i], addr[i+1:]
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("address %q has no valid port", addr)
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1] // bracketed after all
	}
	if host == "" {
		fromHost, _, err := net.SplitHostPort(from)
		if err != nil {
			return "", fmt.Errorf("address %q has no host, and %q, which gave it, is not host:port", addr, from)
		}
		host = fromHost
	}
	if _, err := netip.ParseAddr(host); strings.ContainsAny(host, "[]") || strings.Contains(host, ":") && err != nil {
		return "", fmt.Errorf("address %q has no valid host", addr)
	}
	return net.JoinHostPort(host, port), nil
}

// slotRange parses a slot range of CLUSTER NODES, such as "0-5460" or
// "42"; ok is false for anything else (an importing or migrating slot's
// "[42->-id]").
func slotRange(r string) (lo, hi int, ok bool) {
	l, h, isRange := strings.Cut(r, "-")
	lo, err := strconv.Atoi(l)
	if err != nil {
		return 0, 0, false
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(h); err != nil {
			return 0, 0, false
		}
	}
	return lo, hi, hi >= lo
}

// slotCount returns the number of slots in ranges such as "0-5460".
func slotCount(ranges []string) int {
	total := 0
	for _, r := range ranges {
		if lo, hi, ok := slotRange(r); ok {
			total += hi - lo + 1
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

// seedAddr returns the address of the cluster node a's server at hostPort:
// a's credentials and TLS settings, with hostPort's host and port. It fails
// for a hostPort that is not host:port, rather than fall back to a server
// that is not the one named.
func seedAddr(a redisaddr.Node, hostPort string) (redisaddr.Addr, error) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return redisaddr.Addr{}, fmt.Errorf("server address %q: %w", hostPort, err)
	}
	sa := a.Addr
	sa.Host, sa.Port = host, port
	return sa, nil
}

// clusterView reads CLUSTER NODES at hostPort, a server of the cluster node a.
// A reply that cannot be parsed is a badView.
func clusterView(ctx context.Context, a redisaddr.Node, hostPort string, timeout time.Duration) ([]clusterNodeInfo, error) {
	sa, err := seedAddr(a, hostPort)
	if err != nil {
		return nil, err
	}
	c, err := keystatus.NewClient(sa, timeout) // TLS for rediss://
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	text, err := c.Do(cctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return nil, err
	}
	nodes, err := parseClusterNodes(text, hostPort)
	if err != nil {
		return nil, badView{err}
	}
	return nodes, nil
}

// badView is the error of a reply of CLUSTER NODES that cannot be parsed:
// the server answered.
type badView struct{ error }

func (e badView) Unwrap() error { return e.error }

// readClusterView reads CLUSTER NODES from the first seed of a that answers.
// It returns the seed that answered; with an error, whether some seed
// answered (a server that is not a cluster, or refused the command) rather
// than none. When none answered, the error is a noSeedAnswered, which says
// of each seed of a rediss:// node that timed out whether it answers in
// plaintext (seedsInPlaintext).
func readClusterView(ctx context.Context, a redisaddr.Node, timeout time.Duration) (nodes []clusterNodeInfo, seed string, answered bool, err error) {
	errs := make([]error, len(a.Seeds))
	for i, seed := range a.Seeds {
		nodes, err := clusterView(ctx, a, seed, timeout)
		if err == nil {
			return nodes, seed, true, nil
		}
		var rerr redis.Error
		if errors.As(err, &rerr) { // the server answered, with an error
			return nil, seed, true, fmt.Errorf("%s: %w", seed, err)
		}
		if errors.As(err, new(badView)) {
			return nil, seed, true, err
		}
		errs[i] = err
	}
	said := seedsInPlaintext(ctx, a, errs, timeout)
	var (
		msgs      []string
		plaintext bool
	)
	for i, seed := range a.Seeds {
		msg := fmt.Sprintf("%s: %v", seed, errs[i])
		if said[i] != "" {
			msg += ": " + notTLS(said[i])
			plaintext = true
		}
		msgs = append(msgs, msg)
	}
	return nil, "", false, noSeedAnswered{msg: strings.Join(msgs, "; "), plaintext: plaintext}
}

// noSeedAnswered is readClusterView's error when no seed answered: each
// seed's error, and whether a seed of a rediss:// node answers in plaintext.
type noSeedAnswered struct {
	msg       string
	plaintext bool
}

func (e noSeedAnswered) Error() string { return e.msg }

// seedsInPlaintext returns, for each seed of the rediss:// cluster node a
// whose error in errs (by the seeds' order) is a timeout, what it answers to
// a PING in plaintext (plaintextAnswer), and "" for the others: a cluster
// without TLS never answers the handshake, and its seeds' errors say only
// "context deadline exceeded", as a server's do (see tlsHints). The probes
// run at once, each bounded by min(timeout, refusalWait).
func seedsInPlaintext(ctx context.Context, a redisaddr.Node, errs []error, timeout time.Duration) []string {
	said := make([]string, len(a.Seeds))
	if cfg, err := a.TLSConfig(nil); err != nil || cfg == nil {
		return said
	}
	var wg sync.WaitGroup
	for i, seed := range a.Seeds {
		if i >= len(errs) || errs[i] == nil || !connalive.Timeout(errs[i]) {
			continue
		}
		sa, err := seedAddr(a, seed)
		if err != nil {
			continue
		}
		wg.Go(func() { said[i] = plaintextAnswer(ctx, sa, timeout) })
	}
	wg.Wait()
	return said
}

// servesSlot reports whether slot is in one of ranges, such as "0-5460".
func servesSlot(ranges []string, slot int) bool {
	for _, r := range ranges {
		if lo, hi, ok := slotRange(r); ok && lo <= slot && slot <= hi {
			return true
		}
	}
	return false
}

// probeClusterNode checks a node that is a Redis Cluster: its topology from
// the first seed that answers (CLUSTER NODES), the server checks of every
// primary that serves slots, merged (the worst verdict, naming the
// primaries that gave it), then replicas that a failover could promote,
// slots that no shard serves, and whether the primaries agree on the slot
// map. The seeds themselves are not checked as servers: a seed may be a
// replica, to which the cluster clients send no lock command.
func probeClusterNode(ctx context.Context, a redisaddr.Node, o doctorOptions) *nodeReport {
	n := &nodeReport{Addr: a.String(), addr: a.Addr, Status: statusOK}
	nodes, seed, answered, err := readClusterView(ctx, a, o.timeout)
	n.hostPort = seed
	switch {
	case !answered:
		// The first seed, so that two clusters that no seed of answers are
		// not taken for one ("" and "").
		n.hostPort = a.HostPort()
		if e, ok := err.(noSeedAnswered); ok && e.plaintext {
			n.down = "TLS handshake failed" // as for a server (probeNode)
		}
		n.add("reachable", statusFail, "no seed answered: %v", err)
		return n
	case errors.As(err, new(badView)):
		n.Reachable = true
		n.add("cluster", statusFail, "%v", err)
		return n
	case authRefused(err): // NOAUTH, WRONGPASS
		// As for a server, whose PING fails: the node cannot be used.
		n.add("reachable", statusFail, "authentication failed: %v: check the user and password", err)
		return n
	case err != nil:
		n.Reachable = true
		switch {
		case driver.PermanentCode(err) == "NOPERM":
			n.add("cluster", statusFail, "CLUSTER NODES failed: %v: the user may not run it, and without it the shards are unknown", err)
		case strings.Contains(err.Error(), "cluster support disabled"):
			n.add("cluster", statusFail, "CLUSTER NODES failed: %v: not a cluster-enabled server; give it without cluster=true", err)
		default:
			n.add("cluster", statusFail, "CLUSTER NODES failed: %v", err)
		}
		return n
	}
	// A seed answered: the node is reachable, unless a primary that serves
	// slots is not (mergeServers).
	n.Reachable = true

	byID := make(map[string]*shardReport)
	assigned := 0
	var serving []clusterNodeInfo // the primaries that serve slots
	for _, cn := range nodes {
		n.clusterIDs = append(n.clusterIDs, cn.id)
		if cn.primary {
			slots := slotCount(cn.slots)
			n.Shards = append(n.Shards, shardReport{Primary: cn.addr, ID: cn.id, Slots: slots})
			assigned += slots
			if slots > 0 {
				serving = append(serving, cn)
			}
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

	// Every primary that serves slots takes lock commands: check each.
	slices.SortFunc(serving, func(x, y clusterNodeInfo) int { return strings.Compare(x.addr, y.addr) })
	servers := make([]*nodeReport, len(serving))
	var wg sync.WaitGroup
	for i, cn := range serving {
		wg.Go(func() {
			sa, err := seedAddr(a, cn.addr)
			if err != nil {
				servers[i] = &nodeReport{hostPort: cn.addr, Status: statusOK}
				servers[i].add("reachable", statusFail, "%v", err)
				return
			}
			servers[i] = probeNode(ctx, sa, o, func(slot int) bool { return servesSlot(cn.slots, slot) })
		})
	}
	wg.Wait()
	if len(serving) == 0 {
		n.add("reachable", statusOK, "%s answered CLUSTER NODES; no primary serves slots, so none is checked as a server", seed)
	}
	mergeServers(n, servers)

	n.add("shards", statusOK, "a Redis Cluster of %d shard(s) serving %d of 16384 slots", len(n.Shards), assigned)
	if assigned == 0 {
		n.add("slots", statusFail, "no slot is assigned to a shard: the cluster serves no key, so every lock fails on this node; assign the slots (CLUSTER ADDSLOTS, or redis-cli --cluster create)")
	} else if assigned < 16384 {
		n.add("slots", statusFail, "%d slot(s) have no shard: locks on their keys fail on this node", 16384-assigned)
	}
	if replicas > 0 {
		n.add("replicas", statusWarn, "%d replica(s) could be promoted by a failover, which loses the locks their primary held (replication is asynchronous); count on each shard's primary only, and delay a promoted replica's service by the largest TTL", replicas)
	}
	want := slotMap(nodes)
	var disagree, moving []string
	failed := 0
	for _, s := range n.Shards {
		other, err := clusterView(ctx, a, s.Primary, o.timeout)
		if err != nil {
			n.add("slot map", statusWarn, "CLUSTER NODES at %s failed: %v", s.Primary, err)
			failed++
			continue
		}
		if slotMap(other) != want {
			disagree = append(disagree, s.Primary)
		}
		for _, cn := range other { // a primary lists its own migrations only
			if len(cn.moving) > 0 {
				moving = append(moving, cn.addr+" "+strings.Join(cn.moving, " "))
			}
		}
	}
	if len(moving) > 0 {
		n.add("migration", statusWarn, "slots in migration (CLUSTER SETSLOT MIGRATING/IMPORTING): %s: commands on their keys are redirected (ASK), and a fenced lock (--fencing, WithFencing) on a key of such a slot fails on this node (TRYAGAIN) until the migration is finished or aborted", strings.Join(moving, "; "))
	}
	switch {
	case len(disagree) > 0:
		n.add("slot map", statusWarn, "%s disagree(s) with %s on the slot map: a migration or failover in progress, or a split cluster; commands are redirected meanwhile", strings.Join(disagree, ", "), n.hostPort)
	case failed == 0: // agreement is known only when every primary answered
		n.add("slot map", statusOK, "the %d primaries agree on the slot map", len(n.Shards))
	}
	if len(a.Seeds) > 1 {
		checkSeeds(ctx, n, a, nodes, o.timeout)
	}
	return n
}

// checkSeeds reads CLUSTER NODES from every seed of the cluster node a but
// the one that answered first (n.hostPort, whose view is nodes), each bounded
// by timeout, and checks that each is a node of the same cluster: one that
// shares no node ID with nodes is a node of another cluster, which is unsafe,
// since the cluster clients read the slot map from a seed taken at random
// (go-redis and rueidis shuffle them): two Clients of this one address could
// lock on different clusters, and both hold one lock. A seed that does not
// answer, or that is no cluster node, is a warning: the clients skip it.
func checkSeeds(ctx context.Context, n *nodeReport, a redisaddr.Node, nodes []clusterNodeInfo, timeout time.Duration) {
	ids := make(map[string]bool, len(nodes))
	for _, cn := range nodes {
		ids[cn.id] = true
	}
	others := slices.DeleteFunc(slices.Clone(a.Seeds), func(s string) bool { return s == n.hostPort })
	foreign := make([]bool, len(others))
	errs := make([]error, len(others))
	var wg sync.WaitGroup
	for i, s := range others {
		wg.Go(func() {
			view, err := clusterView(ctx, a, s, timeout)
			if err != nil {
				errs[i] = err
				return
			}
			foreign[i] = !slices.ContainsFunc(view, func(cn clusterNodeInfo) bool { return ids[cn.id] })
		})
	}
	wg.Wait()
	var bad, down []string
	for i, s := range others {
		switch {
		case foreign[i]:
			bad = append(bad, s)
		case errs[i] != nil:
			down = append(down, fmt.Sprintf("%s: %v", s, errs[i]))
		}
	}
	switch {
	case len(bad) > 0:
		n.add("seeds", statusFail, "%s: not a node of the cluster that %s belongs to (no node ID in common): the cluster clients read the slot map from a seed taken at random, so Clients given this address could lock on different clusters and two of them hold one lock, and the drivers refuse such a node: every lock through it fails; give the seeds of one cluster only", strings.Join(bad, ", "), n.hostPort)
	case len(down) > 0:
		n.add("seeds", statusWarn, "%s: the clients skip such a seed, and the cluster is found from the others", strings.Join(down, "; "))
	default:
		n.add("seeds", statusOK, "every seed (%d) is a node of this cluster", len(a.Seeds))
	}
}

// mergeServers gives the cluster node n the server checks of its primaries
// (servers): one check per name, with the worst verdict and the messages
// of the primaries that gave it, each named, and the verdict of the others.
// The node is reachable when every primary is; its round trip is the
// slowest primary's, its clock the one farthest from this machine's; its
// server, version and run_id are those of the first primary in servers
// (sorted by address) that gave them.
func mergeServers(n *nodeReport, servers []*nodeReport) {
	if len(servers) == 0 {
		return
	}
	n.Reachable = true
	var names []string
	for _, s := range servers {
		n.Reachable = n.Reachable && s.Reachable
		n.RTTMillis = max(n.RTTMillis, s.RTTMillis)
		if n.Server == "" {
			n.Server, n.Version, n.RunID = s.Server, s.Version, s.RunID
		}
		if n.Role == "" || s.Role != "master" && s.Role != "" {
			n.Role = s.Role
		}
		if s.ClockOffsetMillis != nil && (n.ClockOffsetMillis == nil || abs(s.clockOffset)-s.clockError > abs(n.clockOffset)-n.clockError) {
			n.ClockOffsetMillis, n.ClockErrorMillis = s.ClockOffsetMillis, s.ClockErrorMillis
			n.clockOffset, n.clockError = s.clockOffset, s.clockError
		}
		for _, c := range s.Checks {
			// "cluster" warns about a cluster-enabled server given as
			// one server; this one is given as a cluster.
			if c.Name != "cluster" && !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	for _, name := range names {
		// worst[i] is server i's worst verdict of the check, "" for none.
		worst := make([]status, len(servers))
		all := status("")
		for i, s := range servers {
			for _, c := range s.Checks {
				if c.Name == name {
					worst[i] = worseOf(worst[i], c.Status)
				}
			}
			all = worseOf(all, worst[i])
		}
		// The worst messages, each with the primaries that gave it.
		var msgs []string
		at := make(map[string][]string) // message -> primaries
		var others []string
		rest := status("")
		for i, s := range servers {
			switch worst[i] {
			case "":
			case all:
				for _, c := range s.Checks {
					if c.Name == name && c.Status == all {
						if at[c.Message] == nil {
							msgs = append(msgs, c.Message)
						}
						at[c.Message] = append(at[c.Message], s.hostPort)
					}
				}
			default:
				others = append(others, s.hostPort)
				rest = worseOf(rest, worst[i])
			}
		}
		parts := make([]string, len(msgs))
		for i, m := range msgs {
			parts[i] = strings.Join(at[m], ", ") + ": " + m
			if len(servers) > 1 && len(at[m]) == len(servers) {
				parts[i] = fmt.Sprintf("every primary (%d): %s", len(servers), m)
			}
		}
		if len(others) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(others, ", "), rest))
		}
		n.add(name, all, "%s", strings.Join(parts, "; "))
	}
}

// worseOf is worse, where "" (no verdict) is better than any verdict.
func worseOf(a, b status) status {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return worse(a, b)
}
