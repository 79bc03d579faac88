//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// doctorJSON runs doctor --json on addrs and decodes its report.
func doctorJSON(t *testing.T, addrs string, args ...string) (doctorReport, result) {
	t.Helper()
	r := invoke(t, "", append([]string{"doctor", "--json", "--nodes", addrs}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json printed no JSON report (%v):\n%v", err, r)
	}
	return rep, r
}

// findCheck returns the first check named name with the given status.
func findCheck(checks []check, name string, st status) (check, bool) {
	for _, c := range checks {
		if c.Name == name && c.Status == st {
			return c, true
		}
	}
	return check{}, false
}

func TestDoctorHealthy(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	durable := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
	addrs := strings.Join(append(redistest.Addrs(servers), durable.Addr()), ",")

	r := invoke(t, "", "doctor", "--nodes", addrs)
	if r.code != 0 {
		t.Fatalf("doctor on three healthy nodes: want exit 0, got %v", r)
	}
	for _, want := range []string{"appendonly no", "appendfsync always", "3 distinct servers", "quorum 2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report does not mention %q:\n%s", want, r.stdout)
		}
	}

	rep, r := doctorJSON(t, addrs)
	if r.code != 0 || rep.Status != statusWarn || len(rep.Nodes) != 3 || rep.Quorum != 2 {
		t.Fatalf("doctor --json: want exit 0, status warn (persistence), 3 nodes, quorum 2; got %+v\n%v", rep, r)
	}
	for _, n := range rep.Nodes {
		if !n.Reachable || n.Version == "" || n.Role != "master" || n.RunID == "" || n.ClockOffsetMillis == nil {
			t.Errorf("node %s: want reachable, version, master, run_id and a clock offset; got %+v", n.Addr, n)
		}
		if _, ok := findCheck(n.Checks, "permissions", statusOK); !ok {
			t.Errorf("node %s: permissions not ok: %+v", n.Addr, n.Checks)
		}
	}
	if _, ok := findCheck(rep.Nodes[2].Checks, "persistence", statusOK); !ok {
		t.Errorf("the node with appendfsync always: persistence not ok: %+v", rep.Nodes[2].Checks)
	}
	if _, ok := findCheck(rep.Nodes[0].Checks, "persistence", statusWarn); !ok {
		t.Errorf("a node without appendonly: no persistence warning: %+v", rep.Nodes[0].Checks)
	}
}

func TestDoctorEvictingNode(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	evicting := redistest.NewServer(t, redistest.WithConfig("maxmemory", "10mb"), redistest.WithConfig("maxmemory-policy", "allkeys-lru"))
	addrs := strings.Join(append(redistest.Addrs(servers), evicting.Addr()), ",")

	r := invoke(t, "", "doctor", "--nodes", addrs)
	if r.code != exitFailure || !strings.Contains(r.stdout, "allkeys-lru") {
		t.Fatalf("doctor with an evicting node: want exit 1 and allkeys-lru named, got %v", r)
	}
	rep, _ := doctorJSON(t, addrs)
	if rep.Status != statusFail || rep.Nodes[2].Status != statusFail || rep.Nodes[0].Status == statusFail {
		t.Fatalf("want the set and the evicting node failed, the others not: %+v", rep)
	}
	if _, ok := findCheck(rep.Nodes[2].Checks, "eviction", statusFail); !ok {
		t.Errorf("no failed eviction check: %+v", rep.Nodes[2].Checks)
	}
}

func TestDoctorReplica(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 3)
	host, port, _ := net.SplitHostPort(servers[0].Addr())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := servers[2].Do(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	addrs := strings.Join(redistest.Addrs(servers), ",")
	r := invoke(t, "", "doctor", "--nodes", addrs)
	if r.code != exitFailure || !strings.Contains(r.stdout, "replica") {
		t.Fatalf("doctor with a replica: want exit 1 and the replica named, got %v", r)
	}
	rep, _ := doctorJSON(t, addrs)
	if rep.Nodes[2].Role != "replica" {
		t.Errorf("node 3: role %q, want replica", rep.Nodes[2].Role)
	}
	if _, ok := findCheck(rep.Nodes[2].Checks, "role", statusFail); !ok {
		t.Errorf("node 3: no failed role check: %+v", rep.Nodes[2].Checks)
	}
}

func TestDoctorDuplicateServer(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	_, port, _ := net.SplitHostPort(servers[0].Addr())
	addrs := strings.Join(append(redistest.Addrs(servers), "localhost:"+port), ",")
	r := invoke(t, "", "doctor", "--nodes", addrs)
	if r.code != exitFailure || !strings.Contains(r.stdout, "same server") {
		t.Fatalf("doctor with one server under two addresses: want exit 1 and 'same server', got %v", r)
	}
	rep, _ := doctorJSON(t, addrs)
	if _, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok {
		t.Errorf("no failed duplicates check: %+v", rep.Checks)
	}
}

func TestDoctorUnreachable(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	down := redistest.DownAddrs(t, 1)[0] // nothing listens there
	addrs := strings.Join(append(redistest.Addrs(servers), down), ",")
	rep, r := doctorJSON(t, addrs, "--timeout", "1s")
	if r.code != exitFailure || rep.Nodes[2].Reachable {
		t.Fatalf("doctor with a node down: want exit 1 and the node unreachable, got %+v\n%v", rep, r)
	}
	if _, ok := findCheck(rep.Nodes[2].Checks, "reachable", statusFail); !ok {
		t.Errorf("no failed reachable check: %+v", rep.Nodes[2].Checks)
	}
	if rep.Status != statusFail {
		t.Errorf("status %q, want fail", rep.Status)
	}
}

// TestDoctorPermissions checks users that may not run PEXPIRE: one that may
// run ACL DRYRUN, one that may not, so that the scratch key is used.
func TestDoctorPermissions(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	servers := redistest.NewServers(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		for _, acl := range [][]string{
			{"ACL", "SETUSER", "nopexpire", "on", ">" + password, "~*", "&*", "+@all", "-pexpire"},
			{"ACL", "SETUSER", "noacl", "on", ">" + password, "~*", "&*", "+@all", "-pexpire", "-acl"},
		} {
			if _, err := s.Do(ctx, acl...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, user := range []string{"nopexpire", "noacl"} {
		t.Run(user, func(t *testing.T) {
			var urls []string
			for _, s := range servers {
				urls = append(urls, "redis://"+user+":"+password+"@"+s.Addr())
			}
			addrs := strings.Join(urls, ",")
			r := invoke(t, "", "doctor", "--nodes", addrs)
			if r.code != exitFailure || !strings.Contains(strings.ToLower(r.stdout), "pexpire") {
				t.Fatalf("doctor for a user without PEXPIRE: want exit 1 and PEXPIRE named, got %v", r)
			}
			rep, r := doctorJSON(t, addrs)
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Fatalf("doctor printed the password:\n%v", r)
			}
			for _, n := range rep.Nodes {
				if _, ok := findCheck(n.Checks, "permissions", statusFail); !ok {
					t.Errorf("node %s: no failed permissions check: %+v", n.Addr, n.Checks)
				}
			}
		})
	}
}

// TestDoctorHidesPasswords runs doctor, as text and as JSON, on nodes given
// with passwords: right, wrong, and on a node that is down. The report names
// every node, and no password appears in any output.
func TestDoctorHidesPasswords(t *testing.T) {
	t.Parallel()
	const password = "doctor-S3cret-pw"
	servers := redistest.NewServers(t, 2, redistest.WithPassword(password))
	down := redistest.NewServer(t)
	downAddr := down.Addr()
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	addrs := strings.Join([]string{
		"redis://:" + password + "@" + servers[0].Addr(),
		"redis://default:wrong-" + password + "@" + servers[1].Addr(),
		"redis://user:" + password + "@" + downAddr,
	}, ",")
	for _, args := range [][]string{{"doctor"}, {"doctor", "--json"}} {
		r := invoke(t, "", append(args, "--nodes", addrs)...)
		if r.code != exitFailure {
			t.Errorf("%v with a wrong password and a node down: want exit 1, got %v", args, r)
		}
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Errorf("%v printed a password:\n%v", args, r)
		}
		for _, want := range []string{servers[0].Addr(), servers[1].Addr(), downAddr, "xxxxx"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: the report does not show %q:\n%v", args, want, r)
			}
		}
	}
}

// TestDoctorReadPermissions checks a user that may lock but not run PTTL:
// doctor passes it, warning that status and Lock.TTL fail.
func TestDoctorReadPermissions(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	servers := redistest.NewServers(t, 3)
	var urls []string
	for _, s := range servers {
		if _, err := s.Do(t.Context(), "ACL", "SETUSER", "nopttl", "on", ">"+password, "~*", "&*", "+@all", "-pttl"); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "redis://nopttl:"+password+"@"+s.Addr())
	}
	rep, r := doctorJSON(t, strings.Join(urls, ","))
	if r.code == exitFailure && rep.Status == statusFail {
		for _, n := range rep.Nodes {
			if c, ok := findCheck(n.Checks, "permissions", statusFail); ok {
				t.Fatalf("doctor failed a user without PTTL, which only status and Lock.TTL need: %+v", c)
			}
		}
	}
	for _, n := range rep.Nodes {
		c, ok := findCheck(n.Checks, "permissions", statusWarn)
		if !ok || !strings.Contains(c.Message, "PTTL") || !strings.Contains(c.Message, "status") {
			t.Errorf("node %s: no warning that PTTL is refused: %+v", n.Addr, n.Checks)
		}
	}
}

// TestDoctorRefusedWrites checks nodes whose user may lock (ACL DRYRUN says
// so) but whose server refuses every write: memory full under noeviction
// (OOM), min-replicas-to-write not met (NOREPLICAS). doctor passed them, and
// every lock on them failed. It fails them now, naming the reason, whether
// it checked the user's rights with ACL DRYRUN or on a scratch key.
func TestDoctorRefusedWrites(t *testing.T) {
	t.Parallel()
	full := redistest.NewServer(t, redistest.WithConfig("maxmemory", "2mb"), redistest.WithConfig("maxmemory-policy", "noeviction"))
	noReplicas := redistest.NewServer(t, redistest.WithConfig("min-replicas-to-write", "1"))
	healthy := redistest.NewServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// About 4 MB of values, past maxmemory: a script may overshoot it.
	if _, err := full.Do(ctx, "EVAL", "for i = 1, 30000 do redis.call('SET', 'fill:' .. i, string.rep('x', 100)) end", "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := full.Do(ctx, "ACL", "SETUSER", "noacl", "on", ">pw", "~*", "&*", "+@all", "-acl"); err != nil {
		t.Fatal(err)
	}
	addrs := strings.Join([]string{full.Addr(), noReplicas.Addr(), healthy.Addr(), "redis://noacl:pw@" + full.Addr()}, ",")
	rep, r := doctorJSON(t, addrs)
	if r.code != exitFailure || rep.Status != statusFail {
		t.Fatalf("doctor on a full node and one without its replicas: want exit 1, status fail; got %+v\n%v", rep, r)
	}
	for i, want := range map[int]string{0: "OOM", 1: "NOREPLICAS", 3: "OOM"} {
		n := rep.Nodes[i]
		c, ok := findCheck(n.Checks, "writes", statusFail)
		if !ok || !strings.Contains(c.Message, want) {
			t.Errorf("node %s: want a failed writes check naming %s, got %+v", n.Addr, want, n.Checks)
		}
	}
	if _, ok := findCheck(rep.Nodes[2].Checks, "writes", statusOK); !ok || rep.Nodes[2].Status == statusFail {
		t.Errorf("the healthy node: want writes ok and no failure, got %+v", rep.Nodes[2])
	}
}

// TestDoctorScratchOptionalPermissions checks users without ACL rights, as
// the README's least-privilege one, for which doctor cannot use ACL DRYRUN
// and writes on a scratch key instead. It checked only what every lock
// needs there, and said ok to a user that could not subscribe to release
// notices (waiters poll), keep fencing counters (--fencing fails) or run
// PTTL (status and Lock.TTL fail); it warns about each now, and about
// nothing for a user that has them all.
func TestDoctorScratchOptionalPermissions(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	s := redistest.NewServer(t)
	base := []string{"reset", "on", ">" + password, "~lock:*", "&redlock:released:{*}lock:*",
		"+set", "+get", "+del", "+pexpire", "+eval", "+evalsha", "+spublish", "+ping", "+info"}
	for user, extra := range map[string][]string{
		"lockonly": nil,
		"full":     {"~redlock:fence:*", "~{lock:*", "+pttl", "+ssubscribe", "+sunsubscribe"},
	} {
		if _, err := s.Do(t.Context(), append(append([]string{"ACL", "SETUSER", user}, base...), extra...)...); err != nil {
			t.Fatal(err)
		}
	}
	rep, r := doctorJSON(t, "redis://lockonly:"+password+"@"+s.Addr()+",redis://full:"+password+"@"+s.Addr(), "--key", "lock:jobs")
	if strings.Contains(r.stdout+r.stderr, password) {
		t.Fatalf("doctor printed the password:\n%v", r)
	}
	if len(rep.Nodes) != 2 {
		t.Fatalf("want two nodes in the report, got %+v\n%v", rep, r)
	}
	var warned []string
	for _, c := range rep.Nodes[0].Checks {
		if c.Name == "permissions" && c.Status == statusWarn {
			warned = append(warned, c.Message)
		}
	}
	for _, want := range []string{"fencing", "waiters poll", "Lock.TTL"} {
		if !slices.ContainsFunc(warned, func(m string) bool { return strings.Contains(m, want) }) {
			t.Errorf("a user without fencing counters, SSUBSCRIBE and PTTL: no permissions warning saying %q; got %q", want, warned)
		}
	}
	if _, ok := findCheck(rep.Nodes[0].Checks, "permissions", statusOK); !ok {
		t.Errorf("the user may lock: want a permissions check ok, got %+v", rep.Nodes[0].Checks)
	}
	if c, ok := findCheck(rep.Nodes[1].Checks, "permissions", statusWarn); ok {
		t.Errorf("a user with every permission: want no permissions warning, got %+v", c)
	}
	// Neither may run TIME, which the library never sends: doctor says
	// that only its own check needs it.
	if c, ok := findCheck(rep.Nodes[1].Checks, "clock", statusWarn); !ok || !strings.Contains(c.Message, "only this check needs") {
		t.Errorf("a user without +time: want a clock warning saying that only doctor needs TIME, got %+v", rep.Nodes[1].Checks)
	}
}

// TestDoctorOldFenceCounters: with --prefix, the fencing counters are the
// prefix's own (driver.PrefixFenceKey), which a user of the prefix's keys
// keeps, so doctor says no fencing failure for a user of only those keys;
// it warns that such a user may not read the counters of earlier versions
// (driver.OldFenceKeys), which the README's rule lets it read (%R~), and of
// nothing for a user of the README's rule: through ACL DRYRUN and on the
// scratch key alike.
func TestDoctorOldFenceCounters(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	s := redistest.NewServer(t)
	base := []string{"reset", "on", ">" + password, "~lock:*", "&redlock:released:{*}lock:*",
		"+set", "+get", "+del", "+pexpire", "+pttl", "+eval", "+evalsha", "+spublish", "+ssubscribe", "+sunsubscribe", "+ping", "+info"}
	old := []string{"%R~redlock:fence:*", "%R~{lock:*"}
	dry := []string{"+acl|whoami", "+acl|dryrun"}
	users := []struct {
		name  string
		extra []string
		warn  bool
	}{
		{"narrow", nil, true},
		{"readme", old, false},
		{"narrowdry", dry, true},
		{"readmedry", append(slices.Clone(old), dry...), false},
	}
	var addrs []string
	for _, u := range users {
		if _, err := s.Do(t.Context(), append(append([]string{"ACL", "SETUSER", u.name}, base...), u.extra...)...); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, "redis://"+u.name+":"+password+"@"+s.Addr())
	}
	rep, r := doctorJSON(t, strings.Join(addrs, ","), "--prefix", "lock:", "--key", "jobs")
	if len(rep.Nodes) != len(users) {
		t.Fatalf("want %d nodes in the report, got %+v\n%v", len(users), rep, r)
	}
	for i, u := range users {
		var warned []string
		for _, c := range rep.Nodes[i].Checks {
			if c.Name == "permissions" && c.Status == statusWarn {
				warned = append(warned, c.Message)
			}
		}
		old := slices.ContainsFunc(warned, func(m string) bool { return strings.Contains(m, "earlier versions") })
		if old != u.warn || len(warned) != map[bool]int{false: 0, true: 1}[u.warn] {
			t.Errorf("user %s: permissions warnings %q; want one about the counters of earlier versions: %v, and no other", u.name, warned, u.warn)
		}
		if slices.ContainsFunc(warned, func(m string) bool { return strings.Contains(m, "WithFencing fails") }) {
			t.Errorf("user %s may keep the prefix's counters, but doctor says fencing fails: %q", u.name, warned)
		}
	}
}

// TestDoctorRDBSnapshots checks that doctor's persistence warning for a
// node without appendonly says which RDB snapshots it takes, as CONFIG GET
// save tells: with save "" a clean restart forgets every lock too, with
// snapshots a crash forgets those since the last one. It said only
// "appendonly no", the same for both.
func TestDoctorRDBSnapshots(t *testing.T) {
	t.Parallel()
	none := redistest.NewServer(t, redistest.WithConfig("save", ""))
	snapshots := redistest.NewServer(t, redistest.WithConfig("save", "3600", "1", "60", "10000"))
	rep, r := doctorJSON(t, none.Addr()+","+snapshots.Addr())
	if len(rep.Nodes) != 2 {
		t.Fatalf("doctor --json: want 2 nodes, got %+v\n%v", rep, r)
	}
	for i, want := range []string{`save "" (no RDB snapshot, not even at shutdown)`, "save 3600 1 60 10000"} {
		c, ok := findCheck(rep.Nodes[i].Checks, "persistence", statusWarn)
		if !ok || !strings.Contains(c.Message, want) {
			t.Errorf("node %s: want a persistence warning saying %q, got %+v", rep.Nodes[i].Addr, want, rep.Nodes[i].Checks)
		}
	}
}

// The report's summary line counts one node as one node.
func TestDoctorOneNodeSummary(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 1)
	r := invoke(t, "", "doctor", "--nodes", addrs)
	if !strings.Contains(r.stdout, "the set of 1 node\n") {
		t.Errorf("doctor on one node: want \"the set of 1 node\", got %v", r)
	}
}
