//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// doctor on cluster nodes: the shards, the replicas a failover could
// promote, a cluster given twice under other seeds, and unassigned slots.
func TestDoctorCluster(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1))
	seeds := c.Seeds()
	other := "redis://" + seeds[1] + "?cluster=true" // the same cluster from another seed
	single := redistest.NewServer(t)

	rep, r := doctorJSON(t, strings.Join([]string{c.URL(), other, single.Addr()}, ","))
	if r.code == 0 {
		t.Fatalf("doctor on one cluster given twice: want a failure, got %v", r)
	}
	if _, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok {
		t.Errorf("no failed duplicates check for a cluster given under two seeds: %+v", rep.Checks)
	}
	n := rep.Nodes[0]
	if !n.Reachable || len(n.Shards) != 2 {
		t.Fatalf("cluster node: want reachable with 2 shards, got %+v", n)
	}
	for _, s := range n.Shards {
		if len(s.Replicas) != 1 || s.Slots == 0 {
			t.Errorf("shard %+v: want one replica and some slots", s)
		}
	}
	if _, ok := findCheck(n.Checks, "replicas", statusWarn); !ok {
		t.Errorf("no replicas warning: %+v", n.Checks)
	}
	if _, ok := findCheck(n.Checks, "slot map", statusOK); !ok {
		t.Errorf("the primaries of a healthy cluster do not agree on the slot map: %+v", n.Checks)
	}
	if _, ok := findCheck(n.Checks, "cluster", statusWarn); ok {
		t.Errorf("a cluster given as a cluster is warned about cluster mode: %+v", n.Checks)
	}

	// A shard's primary given as a server beside its cluster.
	rep, r = doctorJSON(t, strings.Join([]string{c.URL(), seeds[0], single.Addr()}, ","))
	if _, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok || r.code == 0 {
		t.Errorf("no failed duplicates check for a shard's primary beside its cluster: %+v", rep.Checks)
	}

	// A slot that no shard serves.
	if _, err := c.Shards()[0].Primary().Do(t.Context(), "CLUSTER", "DELSLOTS", "0"); err != nil {
		t.Fatal(err)
	}
	rep, _ = doctorJSON(t, c.URL())
	if ch, ok := findCheck(rep.Nodes[0].Checks, "slots", statusFail); !ok || !strings.Contains(ch.Message, "1 slot") {
		t.Errorf("no failed slots check after DELSLOTS 0: %+v", rep.Nodes[0].Checks)
	}
}

// doctor on a cluster node that requires TLS and a password: the shards are
// read over TLS too, and the report never shows the password.
func TestDoctorClusterTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword("doctor-cluster-secret")))
	rep, r := doctorJSON(t, c.URL())
	if strings.Contains(r.stdout+r.stderr, "doctor-cluster-secret") {
		t.Fatalf("the report shows the password:\n%v", r)
	}
	n := rep.Nodes[0]
	if !n.Reachable || len(n.Shards) != 2 {
		t.Fatalf("cluster node over TLS: want reachable with 2 shards, got %+v", n)
	}
	if _, ok := findCheck(n.Checks, "slot map", statusOK); !ok {
		t.Errorf("the slot map was not read from every primary over TLS: %+v", n.Checks)
	}
}

// doctor checks every primary of a cluster node as a server, not only the
// seed it reached the cluster through: a shard whose primary may evict lock
// keys fails the node, and the message names that primary.
func TestDoctorClusterEvictingShard(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	p := c.Shards()[1].Primary() // the first seed is shard 0's primary
	for _, kv := range [][2]string{{"maxmemory", "100mb"}, {"maxmemory-policy", "allkeys-lru"}} {
		if _, err := p.Do(t.Context(), "CONFIG", "SET", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	rep, r := doctorJSON(t, c.URL())
	n := rep.Nodes[0]
	ch, ok := findCheck(n.Checks, "eviction", statusFail)
	if !ok || n.Status != statusFail || r.code != exitFailure {
		t.Fatalf("shard 1's primary evicts (allkeys-lru): want a failed eviction check, the node failed and exit %d; got %+v (node %v, exit %d)", exitFailure, n.Checks, n.Status, r.code)
	}
	if !strings.Contains(ch.Message, p.Addr()) || !strings.Contains(ch.Message, "allkeys-lru") {
		t.Errorf("the eviction check does not name the evicting primary %s and its policy: %q", p.Addr(), ch.Message)
	}
	if strings.Contains(ch.Message, c.Shards()[0].Primary().Addr()+": maxmemory") {
		t.Errorf("the eviction check blames shard 0's primary, which does not evict: %q", ch.Message)
	}
}

// A cluster node whose first seed is a replica: the cluster clients send it
// no lock command, so its role does not fail the node (the replicas check
// warns about replicas a failover could promote).
func TestDoctorClusterReplicaSeed(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1))
	replica := c.Shards()[0].Replicas()[0]
	url := "redis://" + replica.Addr() + "?cluster=true&addr=" + strings.Join(c.Seeds(), "&addr=")
	rep, r := doctorJSON(t, url)
	n := rep.Nodes[0]
	if ch, ok := findCheck(n.Checks, "role", statusFail); ok {
		t.Errorf("the role check fails a cluster node for its replica seed: %q", ch.Message)
	}
	if n.Status == statusFail || r.code != 0 || n.Role != "master" {
		t.Errorf("cluster node reached through a replica: want no failure, exit 0, role master; got node %v, role %q, exit %d: %+v", n.Status, n.Role, r.code, n.Checks)
	}
	if _, ok := findCheck(n.Checks, "replicas", statusWarn); !ok {
		t.Errorf("no replicas warning: %+v", n.Checks)
	}
}

// A user that may not run ACL DRYRUN: doctor checks its permissions on a
// scratch key, which on each primary of a cluster must be a key of a slot
// that primary serves, not one it would redirect (MOVED).
func TestDoctorClusterScratchPermissions(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(
		redistest.WithConfig("user", "locker", "on", ">locker-pw", "~*", "&*", "+@all", "-acl"),
		redistest.WithConfig("user", "nosub", "on", ">nosub-pw", "~*", "&*", "+@all", "-acl", "-ssubscribe")))
	url := strings.Replace(c.URL(), "redis://", "redis://locker:locker-pw@", 1)

	rep, r := doctorJSON(t, url)
	n := rep.Nodes[0]
	ch, ok := findCheck(n.Checks, "permissions", statusOK)
	if !ok || !strings.Contains(ch.Message, "scratch key") || r.code != 0 {
		t.Errorf("a user without ACL DRYRUN on a cluster: want permissions ok on every primary's scratch key, exit 0; got exit %d, %+v", r.code, n.Checks)
	}
	// Fencing, notifications and PTTL, checked on each primary's scratch
	// key, are the user's: no warning (no MOVED, no CROSSSLOT).
	if c, ok := findCheck(n.Checks, "permissions", statusWarn); ok {
		t.Errorf("a user with every right but ACL on a cluster: want no permissions warning, got %+v", c)
	}
	// Without SSUBSCRIBE, every primary says that waiters poll.
	rep, _ = doctorJSON(t, strings.Replace(c.URL(), "redis://", "redis://nosub:nosub-pw@", 1))
	if ch, ok := findCheck(rep.Nodes[0].Checks, "permissions", statusWarn); !ok || !strings.Contains(ch.Message, "waiters poll") || strings.Count(ch.Message, "SSUBSCRIBE") < 1 {
		t.Errorf("a user without SSUBSCRIBE on a cluster: want a permissions warning that waiters poll, got %+v", rep.Nodes[0].Checks)
	}

	// --key with a hash tag of a slot of shard 1: every key beside it is in
	// that slot, so only shard 1's primary can take a scratch key.
	tag := driver.SlotTag(c.Shards()[1].Slots()[0].First)
	rep, r = doctorJSON(t, url, "--key", "lock:{"+tag+"}nightly")
	n = rep.Nodes[0]
	ch, ok = findCheck(n.Checks, "permissions", statusOK)
	if !ok || r.code != 0 {
		t.Fatalf("--key with a hash tag of shard 1's slot: want permissions ok, exit 0; got exit %d, %+v", r.code, n.Checks)
	}
	for _, want := range []string{c.Shards()[0].Primary().Addr() + ": not checked here", c.Shards()[1].Primary().Addr() + ": SET, EVAL"} {
		if !strings.Contains(ch.Message, want) {
			t.Errorf("the permissions check does not say %q: %q", want, ch.Message)
		}
	}
}

// status on cluster nodes, beside a server: each key is read on the primary
// that serves its slot (here not the first seed's); one cluster given
// twice, or a shard's primary beside its cluster, is refused as one server
// under two addresses is.
func TestStatusCluster(t *testing.T) {
	t.Parallel()
	a, b := redistest.NewCluster(t, 2), redistest.NewCluster(t, 2)
	single := redistest.NewServer(t)
	key := keyOnShard(a, "app:", 1)
	addrs := strings.Join([]string{a.URL(), b.URL(), single.Addr()}, ",")
	holder, h := startHold(t, "--nodes", addrs, "--prefix", "app:", "--fencing", "--ttl", "30s", key)
	defer holder.term()

	r := invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", "--json", key, "nobody")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("status --json on two cluster nodes and a server: %v\n%v", err, r)
	}
	held, free := rep.Keys[0], rep.Keys[1]
	if held.State != keyHeld || held.Fence == nil || *held.Fence != h.Token {
		t.Errorf("the held key: %+v, want held with fence %d", held, h.Token)
	}
	if free.State != keyFree || free.Answered != 3 {
		t.Errorf("the free key: %+v, want free, answered by all 3 nodes", free)
	}
	for i, c := range []*redistest.Cluster{a, b} {
		n := held.Nodes[i]
		if n.Error != "" || n.Shard != c.Shards()[1].Primary().Addr() {
			t.Errorf("the held key on cluster node %d: %+v, want it read on shard 1's primary %s", i+1, n, c.Shards()[1].Primary().Addr())
		}
	}
	r = invoke(t, "", "status", "--nodes", addrs, "--prefix", "app:", key)
	if r.code != 0 || !strings.Contains(r.stdout, key+": held") {
		t.Errorf("status on cluster nodes: want the key held, got %v", r)
	}

	for name, nodes := range map[string]string{
		"one cluster under two seeds":          strings.Join([]string{a.URL(), "redis://" + a.Seeds()[1] + "?cluster=true", single.Addr()}, ","),
		"a shard's primary beside its cluster": strings.Join([]string{a.URL(), a.Shards()[1].Primary().Addr(), single.Addr()}, ","),
	} {
		r := invoke(t, "", "status", "--nodes", nodes, "k")
		if r.code != exitUsage || !strings.Contains(r.stderr, "same Redis Cluster") {
			t.Errorf("status with %s: want exit %d and the reason, got %v", name, exitUsage, r)
		}
	}
}

// Cluster nodes that no seed of answers are not taken for one another (the
// address of one that answered is that of the seed; of one that did not, it
// was ""), but one given twice is still one address.
func TestDoctorUnreachableClustersDistinct(t *testing.T) {
	t.Parallel()
	down := redistest.DownAddrs(t, 3)
	var nodes []string
	for _, a := range down {
		nodes = append(nodes, "redis://"+a+"?cluster=true")
	}
	rep, r := doctorJSON(t, strings.Join(nodes, ","), "--timeout", "1s")
	if ch, ok := findCheck(rep.Checks, "duplicates", statusFail); ok {
		t.Errorf("three unreachable clusters on three addresses reported as duplicates: %q", ch.Message)
	}
	if _, ok := findCheck(rep.Checks, "quorum", statusFail); !ok || r.code != exitFailure {
		t.Errorf("three unreachable clusters: want a failed quorum check and exit %d, got exit %d: %+v", exitFailure, r.code, rep.Checks)
	}

	rep, _ = doctorJSON(t, strings.Join([]string{nodes[0], nodes[0], nodes[1]}, ","), "--timeout", "1s")
	if ch, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok || !strings.Contains(ch.Message, "same address") {
		t.Errorf("an unreachable cluster given twice: want the duplicates check failed for the same address, got %+v", rep.Checks)
	}
}

// A cluster-enabled server with no slot assigned, given as a cluster: its
// seed answers, so the node is reachable (it was reported unreachable, as
// no primary served slots to be checked), and the empty slot map fails it.
func TestDoctorClusterNoSlots(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.WithConfig("cluster-enabled", "yes"))
	url := "redis://" + srv.Addr() + "?cluster=true"
	rep, r := doctorJSON(t, url)
	n := rep.Nodes[0]
	if !n.Reachable || n.Status != statusFail || r.code != exitFailure {
		t.Errorf("a cluster with no slot: want reachable, failed, exit %d; got reachable %v, %v, exit %d: %+v", exitFailure, n.Reachable, n.Status, r.code, n.Checks)
	}
	if ch, ok := findCheck(n.Checks, "slots", statusFail); !ok || !strings.Contains(ch.Message, "no slot is assigned") {
		t.Errorf("want a failed slots check saying that no slot is assigned, got %+v", n.Checks)
	}
	if ch, ok := findCheck(rep.Checks, "quorum", statusFail); ok {
		t.Errorf("the one node answered, yet: %q", ch.Message)
	}
	r = invoke(t, "", "doctor", "--nodes", url)
	if first, _, _ := strings.Cut(r.stdout, "\n"); strings.Contains(first, "unreachable") || strings.Contains(first, "rtt 0.00ms") {
		t.Errorf("the node's line: %q, want it reachable with no round trip measured", first)
	}
}

// A paused primary (SIGSTOP) does not answer CLUSTER NODES: the slot map
// check warns about it and no longer also says that the primaries agree.
func TestDoctorClusterPausedPrimarySlotMap(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 3)
	p := c.Shards()[1].Primary() // not the first seed
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	defer p.Resume()
	rep, r := doctorJSON(t, c.URL(), "--timeout", "1s")
	n := rep.Nodes[0]
	if ch, ok := findCheck(n.Checks, "slot map", statusWarn); !ok || !strings.Contains(ch.Message, p.Addr()) {
		t.Errorf("want a slot map warning naming the paused primary %s, got %+v", p.Addr(), n.Checks)
	}
	if ch, ok := findCheck(n.Checks, "slot map", statusOK); ok {
		t.Errorf("slot map ok (%q) although %s did not answer CLUSTER NODES", ch.Message, p.Addr())
	}
	if n.Reachable || r.code != exitFailure {
		t.Errorf("a paused primary: want the node unreachable and exit %d, got reachable %v, exit %d", exitFailure, n.Reachable, r.code)
	}
}

// A cluster node that refuses the password is not reachable with an odd
// CLUSTER NODES (it was "reachable", with the hint "is it a cluster-enabled
// server?"): doctor says that authentication failed, as PING does for a
// server. A user that may not run CLUSTER NODES is told so, and a server
// that is not cluster-enabled gets the hint. The refusals are told apart by
// authRefused and driver.PermanentCode, as a server's are (probeNode), not
// by go-redis's IsAuthError and IsPermissionError: an unknown or disabled
// ACL user (WRONGPASS) is a refusal too.
func TestDoctorClusterRefusals(t *testing.T) {
	t.Parallel()
	const password = "refusals-secret-pw"
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(redistest.WithPassword(password),
		redistest.WithConfig("user", "nocluster", "on", ">"+password, "~*", "&*", "+@all", "-cluster"),
		redistest.WithConfig("user", "off", "off", ">"+password, "~*", "&*", "+@all")))
	seed := c.Seeds()[0]
	for name, tc := range map[string]struct{ url, code string }{
		"a wrong password": {strings.Replace(c.URL(), password, "refusals-wrong-pw", 1), "WRONGPASS"},
		"no password":      {"redis://" + seed + "?cluster=true", "NOAUTH"},
		"an unknown user":  {"redis://nobody:" + password + "@" + seed + "?cluster=true", "WRONGPASS"},
		"a disabled user":  {"redis://off:" + password + "@" + seed + "?cluster=true", "WRONGPASS"},
	} {
		rep, r := doctorJSON(t, tc.url)
		n := rep.Nodes[0]
		ch, ok := findCheck(n.Checks, "reachable", statusFail)
		if !ok || !strings.Contains(ch.Message, "authentication failed") || !strings.Contains(ch.Message, tc.code+" ") || n.Reachable || r.code != exitFailure {
			t.Errorf("%s: want the node unreachable, authentication failed (%s), exit %d; got reachable %v, exit %d: %+v", name, tc.code, exitFailure, n.Reachable, r.code, n.Checks)
		}
		if strings.Contains(r.stdout, "cluster-enabled") || strings.Contains(r.stdout, password) {
			t.Errorf("%s: the report hints at cluster mode or shows the password:\n%s", name, r.stdout)
		}
	}

	// A user that may not run CLUSTER NODES.
	rep, _ := doctorJSON(t, strings.Replace(c.URL(), "redis://:", "redis://nocluster:", 1))
	if ch, ok := findCheck(rep.Nodes[0].Checks, "cluster", statusFail); !ok || !strings.Contains(ch.Message, "NOPERM") || !strings.Contains(ch.Message, "may not run it") {
		t.Errorf("a user without CLUSTER: want the cluster check failed, saying the user may not run CLUSTER NODES, got %+v", rep.Nodes[0].Checks)
	}

	single := redistest.NewServer(t)
	rep, _ = doctorJSON(t, "redis://"+single.Addr()+"?cluster=true")
	if ch, ok := findCheck(rep.Nodes[0].Checks, "cluster", statusFail); !ok || !strings.Contains(ch.Message, "not a cluster-enabled server") {
		t.Errorf("a server without cluster mode given as a cluster: want the cluster check failed with the hint, got %+v", rep.Nodes[0].Checks)
	}
}

// A cluster node's server, version and run_id, as the README says, are
// those of its first primary by address, not a merge of the shards'.
func TestDoctorClusterIdentityFromFirstPrimary(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 3)
	var first *redistest.Server
	for _, s := range c.Shards() {
		if p := s.Primary(); first == nil || p.Addr() < first.Addr() {
			first = p
		}
	}
	info, err := first.Do(t.Context(), "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := info.(string)
	want := parseInfo(text)
	rep, _ := doctorJSON(t, c.URL())
	n := rep.Nodes[0]
	if n.RunID == "" || n.RunID != want["run_id"] || n.Version != want["redis_version"] {
		t.Errorf("cluster node: run_id %q, version %q; want those of its first primary by address %s: %q, %q", n.RunID, n.Version, first.Addr(), want["run_id"], want["redis_version"])
	}
}
