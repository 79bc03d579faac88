package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/replyerr"
)

// pings is how many PINGs measure a node's round trip.
const pings = 5

// probeNode runs every check of one server. served is nil for a node that is
// one server; for a primary of a cluster node, it tells the slots that the
// primary serves, where a scratch key can be written.
func probeNode(ctx context.Context, a redisaddr.Addr, o doctorOptions, served func(slot int) bool) *nodeReport {
	n := &nodeReport{Addr: a.String(), hostPort: a.HostPort(), addr: a, Status: statusOK}
	c, err := keystatus.NewClient(a, o.timeout) // TLS for rediss://
	if err != nil {
		n.add("reachable", statusFail, "%v", err)
		return n
	}
	defer c.Close()
	call := func(args ...any) *redis.Cmd {
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		return c.Do(cctx, args...)
	}

	// Reachability and round trip.
	rtts := make([]time.Duration, 0, pings)
	for range pings {
		t0 := time.Now()
		if err := call("PING").Err(); err != nil {
			var reply redis.Error
			if authRefused(err) {
				// Reachable, but the server refuses the address's
				// credentials: "unreachable" sent the operator to the
				// network.
				n.down = "authentication refused"
				n.add("reachable", statusFail, "authentication refused: give the node's user and password in its address, redis://USER:PASSWORD@HOST:PORT, in REDLOCK_NODES (the server says: %v)", err)
			} else if connalive.Timeout(err) {
				// Over TLS to a server without it, the handshake
				// gets no answer: a timeout, and no more.
				if said := plaintextAnswer(ctx, a, o.timeout); said != "" {
					n.down = "TLS handshake failed"
					n.add("reachable", statusFail, "PING failed: %v: %s", err, notTLS(said))
				} else {
					n.add("reachable", statusFail, "PING failed: %v", err)
				}
			} else if errors.As(err, &reply) {
				n.add("reachable", statusFail, "PING failed: %v", err)
			} else if said := refusalOnConnect(ctx, a, o.timeout); said != "" {
				// A refusal the client saw as a broken connection.
				n.add("reachable", statusFail, "PING failed: %v; on a new connection the server says: %s", err, said)
			} else {
				n.add("reachable", statusFail, "PING failed: %v", err)
			}
			return n
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	rtt := rtts[len(rtts)/2]
	n.Reachable, n.RTTMillis = true, millis(rtt)
	nodeTimeout := o.nodeTimeout
	if rtt > nodeTimeout/4 {
		n.add("reachable", statusWarn, "round trip %v (median of %d PINGs): slow against the node timeout of %v that a %v TTL gets; a slow node eats into every lock's validity", roundDuration(rtt), pings, nodeTimeout, o.ttl)
	} else {
		n.add("reachable", statusOK, "round trip %v (median of %d PINGs)", roundDuration(rtt), pings)
	}

	info, infoErr := call("INFO").Text()
	fields := parseInfo(info)
	if infoErr != nil {
		n.add("info", statusWarn, "INFO failed, so version, role, eviction and persistence are unknown: %v", infoErr)
	} else {
		checkVersion(n, fields)
		checkRole(n, fields)
		checkEviction(n, fields)
		checkCluster(n, fields)
		n.RunID = fields["run_id"]
		if fields["cluster_enabled"] == "1" {
			// A shard's primary beside its cluster would count twice.
			if id, err := call("CLUSTER", "MYID").Text(); err == nil {
				n.clusterIDs = []string{id}
			}
		}
	}
	checkPersistence(n, fields, infoErr == nil, call, o.ttl)
	checkClock(n, call, o.maxSkew)
	// A subscription, on a connection of its own, as a waiter's.
	subscribe := func(channel string) error {
		cctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		ps := c.SSubscribe(cctx, channel)
		defer ps.Close()
		_, err := ps.ReceiveTimeout(cctx, o.timeout)
		return err
	}
	if !checkPermissions(n, call, subscribe, o, served) {
		// ACL DRYRUN checks rights, not whether the server takes writes.
		checkWrites(n, call, o, served)
	}
	return n
}

// parseInfo parses the reply of INFO into its fields.
func parseInfo(info string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

func checkVersion(n *nodeReport, f map[string]string) {
	n.Server, n.Version = "redis", f["redis_version"]
	if name := f["server_name"]; name != "" {
		n.Server = name
	}
	if v := f["valkey_version"]; v != "" {
		n.Server, n.Version = "valkey", v
		n.add("version", statusOK, "valkey %s", v)
		return
	}
	if !versionAtLeast(n.Version, 2, 6, 12) {
		n.add("version", statusFail, "redis %s: SET with NX and PX needs 2.6.12 or later", n.Version)
		return
	}
	if !versionAtLeast(n.Version, 7, 0, 0) {
		n.add("version", statusWarn, "redis %s: release notifications need 7.0 (SPUBLISH); releases succeed unannounced and waiters poll", n.Version)
		return
	}
	n.add("version", statusOK, "%s %s", n.Server, n.Version)
}

// versionAtLeast reports whether the dotted version v is at least
// major.minor.patch; an unparsable version counts as recent enough.
func versionAtLeast(v string, want ...int) bool {
	parts := strings.Split(v, ".")
	for i, w := range want {
		if i >= len(parts) {
			return true
		}
		got, err := strconv.Atoi(parts[i])
		if err != nil {
			return true
		}
		if got != w {
			return got > w
		}
	}
	return true
}

func checkRole(n *nodeReport, f map[string]string) {
	n.Role = f["role"]
	switch n.Role {
	case "slave", "replica":
		n.Role = "replica"
		n.add("role", statusFail, "a replica of %s:%s: replication is asynchronous, so a promoted replica can lack a lock its primary granted, and a replica refuses writes; every node must be an independent master",
			f["master_host"], f["master_port"])
	case "master":
		if k, _ := strconv.Atoi(f["connected_slaves"]); k > 0 {
			n.add("role", statusWarn, "a master with %d replica(s): if a failover promotes one, locks it had not received yet are lost; do not let failover manage lock nodes", k)
		} else {
			n.add("role", statusOK, "master, no replicas")
		}
	default:
		n.add("role", statusWarn, "role %q unknown", n.Role)
	}
}

func checkEviction(n *nodeReport, f map[string]string) {
	maxmem, policy := f["maxmemory"], f["maxmemory_policy"]
	switch {
	case maxmem == "" && policy == "":
		n.add("eviction", statusWarn, "INFO shows no maxmemory: eviction unknown")
	case maxmem == "0":
		n.add("eviction", statusOK, "no maxmemory: keys are never evicted")
	case policy == "noeviction":
		if human := f["maxmemory_human"]; human != "" {
			maxmem = human
		}
		n.add("eviction", statusOK, "maxmemory %s with maxmemory-policy noeviction: keys are never evicted (writes fail when memory is full)", maxmem)
	default:
		n.add("eviction", statusFail, "maxmemory %s with maxmemory-policy %s: the node may evict lock keys and grant a held lock again; set maxmemory-policy noeviction", f["maxmemory_human"], policy)
	}
}

func checkCluster(n *nodeReport, f map[string]string) {
	if f["cluster_enabled"] == "1" {
		n.add("cluster", statusWarn, "cluster mode, given as a single server: the keys of the slots of the cluster's other shards fail (MOVED), which retrying cannot fix; to use the whole cluster as one node, give its address with ?cluster=true (redis://host:port?cluster=true&addr=host2:port2); a shard's failover loses locks")
	}
}

// checkPersistence reads appendonly and appendfsync.
func checkPersistence(n *nodeReport, f map[string]string, haveInfo bool, call func(...any) *redis.Cmd, ttl time.Duration) {
	// A delayed restart saves the locks, not the fencing counters: the node
	// comes back without them, and a token can repeat (SAFETY.md).
	delayed := fmt.Sprintf("keep a node that crashed down for longer than your largest TTL (%v here) before it rejoins, which saves the locks but not the fencing counters (with fencing, a token can repeat)", ttl)
	advice := delayed + ", or set appendonly yes and appendfsync always, which saves both"
	aof, fsync := "", ""
	if m, err := call("CONFIG", "GET", "append*").Slice(); err == nil {
		for i := 0; i+1 < len(m); i += 2 {
			k, _ := m[i].(string)
			v, _ := m[i+1].(string)
			switch k {
			case "appendonly":
				aof = v
			case "appendfsync":
				fsync = v
			}
		}
	} else if haveInfo {
		switch f["aof_enabled"] {
		case "1":
			aof = "yes"
		case "0":
			aof = "no"
		}
		if aof == "yes" {
			n.add("persistence", statusWarn, "appendonly yes, but appendfsync unknown (CONFIG GET failed: %v); unless it is always, a node that crashes can forget its latest locks: %s", err, advice)
			return
		}
	}
	switch {
	case aof == "yes" && fsync == "always" && noFsyncOnRewrite(call):
		n.add("persistence", statusWarn, "appendonly yes, appendfsync always, but no-appendfsync-on-rewrite yes: while a BGSAVE or BGREWRITEAOF runs, writes are not fsynced (as with appendfsync no), so a machine that crashes then can forget its latest locks and fencing counters; set no-appendfsync-on-rewrite no, or %s", delayed)
	case aof == "yes" && fsync == "always":
		n.add("persistence", statusOK, "appendonly yes, appendfsync always: a node that crashes keeps its locks and fencing counters")
	case aof == "yes":
		n.add("persistence", statusWarn, "appendonly yes, appendfsync %s: a node that crashes can forget its latest locks and fencing counters; %s", fsync, advice)
	case aof == "no":
		switch save, ok := rdbSave(call); {
		case ok && save == "":
			n.add("persistence", statusWarn, "appendonly no, save \"\" (no RDB snapshot, not even at shutdown): a node that crashes or restarts, even cleanly, forgets every lock and fencing counter it held; %s", advice)
		case ok:
			n.add("persistence", statusWarn, "appendonly no, RDB snapshots (save %s): a node that crashes forgets the locks and fencing counters written since its last snapshot, and comes back with an older counter; %s", save, advice)
		default:
			n.add("persistence", statusWarn, "appendonly no: a node that crashes or restarts forgets its locks and fencing counters; %s", advice)
		}
	default:
		n.add("persistence", statusWarn, "unknown (neither CONFIG GET nor INFO told); unless appendfsync is always, %s", advice)
	}
}

// rdbSave returns the node's RDB snapshot schedule (CONFIG GET save: ""
// when it takes none), and whether the node told it.
func rdbSave(call func(...any) *redis.Cmd) (string, bool) {
	m, err := call("CONFIG", "GET", "save").Slice()
	if err != nil {
		return "", false
	}
	for i := 0; i+1 < len(m); i += 2 {
		if k, _ := m[i].(string); k == "save" {
			v, ok := m[i+1].(string)
			return v, ok
		}
	}
	return "", false
}

// noFsyncOnRewrite reports whether the node has no-appendfsync-on-rewrite
// yes: Redis then skips the fsync of appendfsync always (and everysec) while
// a child process saves (BGSAVE, BGREWRITEAOF). A node that does not say
// (CONFIG GET refused) counts as the default, no.
func noFsyncOnRewrite(call func(...any) *redis.Cmd) bool {
	m, err := call("CONFIG", "GET", "no-appendfsync-on-rewrite").Slice()
	if err != nil {
		return false
	}
	for i := 0; i+1 < len(m); i += 2 {
		if k, _ := m[i].(string); k == "no-appendfsync-on-rewrite" {
			v, _ := m[i+1].(string)
			return v == "yes"
		}
	}
	return false
}

// checkClock compares the node's clock (TIME) with this machine's.
func checkClock(n *nodeReport, call func(...any) *redis.Cmd, maxSkew time.Duration) {
	t0 := time.Now()
	v, err := call("TIME").Slice()
	rtt := time.Since(t0)
	if driver.PermanentCode(err) == "NOPERM" {
		// The README's least-privilege user has no +time: the library
		// never sends it.
		n.add("clock", statusWarn, "not checked: the user may not run TIME, which only this check needs (locks do not); to compare the clocks, run doctor as a user with +time: %v", redisErrorText(err))
		return
	}
	if err != nil || len(v) != 2 {
		n.add("clock", statusWarn, "TIME failed: %v", err)
		return
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	usec, err2 := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	if err1 != nil || err2 != nil {
		n.add("clock", statusWarn, "TIME gave %v", v)
		return
	}
	server := time.Unix(sec, usec*1000)
	local := t0.Add(rtt / 2) // the reply was made about halfway through the round trip
	n.clockOffset, n.clockError = server.Sub(local), rtt/2
	off := millis(n.clockOffset)
	n.ClockOffsetMillis, n.ClockErrorMillis = &off, millis(n.clockError)
	msg := fmt.Sprintf("%s (±%v) from this machine's clock", signed(roundDuration(n.clockOffset)), roundDuration(n.clockError))
	if abs(n.clockOffset)-n.clockError > maxSkew {
		n.add("clock", statusWarn, "%s: more than --max-skew %v; the node's clock or this machine's is not synchronized, and a clock stepped forward on a node expires its locks early", msg, maxSkew)
		return
	}
	n.add("clock", statusOK, "%s", msg)
}

// permission is one command the library may send, to be checked.
type permission struct {
	what string // what it is for
	args []any
}

// checkPermissions checks that the node's user may run what the drivers send,
// with ACL DRYRUN, or on a scratch key when DRYRUN is not available. On a
// cluster's primary (served not nil) that includes CLUSTER SLOTS, the slot
// map that every driver's cluster client reads before any lock. It reports
// whether writes need no other check: it wrote on a scratch key (when ACL
// DRYRUN was not available), which shows whether the server takes them, or
// the user may not make them.
func checkPermissions(n *nodeReport, call func(...any) *redis.Cmd, subscribe func(channel string) error, o doctorOptions, served func(slot int) bool) (writesChecked bool) {
	ttl := driver.MillisecondsString(o.ttl)
	user, err := call("ACL", "WHOAMI").Text()
	if err == nil {
		fk, ch := driver.PrefixFenceKey(o.prefix, o.key), driver.ReleaseChannel(o.key)
		required := []permission{
			{"SET", []any{"SET", o.key, "v", "NX", "PX", ttl}},
			{"EVAL", []any{"EVAL", driver.ReleaseScript().Source(), "1", o.key, "v"}},
			{"EVALSHA", []any{"EVALSHA", driver.ReleaseScript().SHA1(), "1", o.key, "v"}},
			{"GET", []any{"GET", o.key}},
			{"PEXPIRE", []any{"PEXPIRE", o.key, ttl}},
			{"DEL", []any{"DEL", o.key}},
		}
		what := "SET, EVAL, EVALSHA, GET, PEXPIRE and DEL on " + strconv.Quote(o.key)
		if served != nil {
			required = append(required, permission{"CLUSTER SLOTS", []any{"CLUSTER", "SLOTS"}})
			what += ", and CLUSTER SLOTS"
		}
		// The counter's GET is what fencing and status both need: asked
		// once, told for each.
		counterRead := []permission{{"GET", []any{"GET", fk}}}
		counterWrite := []permission{{"SET", []any{"SET", fk, "1"}}}
		var olds []permission
		for _, name := range driver.OldFenceKeys(o.key, fk) {
			olds = append(olds, permission{"GET " + strconv.Quote(name), []any{"GET", name}})
		}
		notify := []permission{
			{"SPUBLISH", []any{"SPUBLISH", ch, ""}},
			{"SSUBSCRIBE", []any{"SSUBSCRIBE", ch}},
		}
		// Lock.TTL reads the key alone (PTTL); status reads the counter
		// too.
		ttlRead := []permission{{"PTTL", []any{"PTTL", o.key}}}
		dry := func(ps []permission) (denied []string, err error) {
			for _, p := range ps {
				args := append([]any{"ACL", "DRYRUN", user}, p.args...)
				res, err := call(args...).Text()
				if err != nil {
					return nil, err
				}
				if res != "OK" {
					denied = append(denied, p.what+" ("+res+")")
				}
			}
			return denied, nil
		}
		denied, err := dry(required)
		if err == nil {
			if len(denied) > 0 {
				n.add("permissions", statusFail, "user %s may not run what every lock needs on %q: %s", user, o.key, strings.Join(denied, "; "))
			} else {
				n.add("permissions", statusOK, "user %s may run %s (ACL DRYRUN)", user, what)
			}
			readDenied, readErr := dry(counterRead)
			if d, err := dry(counterWrite); readErr == nil && err == nil && len(readDenied)+len(d) > 0 {
				n.add("permissions", statusWarn, "user %s may not keep fencing counters at %q, so --fencing / WithFencing fails: %s", user, fk, strings.Join(append(readDenied, d...), "; "))
			}
			if d, err := dry(olds); err == nil && len(d) > 0 {
				n.add("permissions", statusWarn, "user %s %s: %s", user, oldCountersDenied, strings.Join(d, "; "))
			}
			if d, err := dry(notify); err == nil && len(d) > 0 {
				n.add("permissions", statusWarn, "user %s may not publish or subscribe to %q, so waiters poll instead of hearing releases: %s", user, ch, strings.Join(d, "; "))
			}
			// Locks work without INFO; only the check that one server
			// is not given under two addresses needs it.
			if d, err := dry([]permission{{"INFO", []any{"INFO", "server"}}}); err == nil && len(d) > 0 {
				n.add("permissions", statusWarn, "user %s may not run INFO, so run, hold and the library cannot tell one server given under two addresses, which would count twice towards the quorum, unseen: %s", user, strings.Join(d, "; "))
			}
			if d, err := dry(ttlRead); err == nil && len(d) > 0 {
				n.add("permissions", statusWarn, "user %s may not read the TTL of %q, so redlock status and Lock.TTL fail: %s", user, o.key, strings.Join(d, "; "))
			}
			if readErr == nil && len(readDenied) > 0 {
				n.add("permissions", statusWarn, "user %s may not read the fencing counter %q, which redlock status reads beside %q, so status shows the key but not its FENCE (Lock.TTL does not read it): %s", user, fk, o.key, strings.Join(readDenied, "; "))
			}
			if served != nil {
				if d, err := dry([]permission{{"CLUSTER SHARDS", []any{"CLUSTER", "SHARDS"}}}); err == nil && len(d) > 0 {
					n.add("permissions", statusWarn, "user %s %s: %s", user, clusterShardsDenied, strings.Join(d, "; "))
				}
			}
			return len(denied) > 0
		}
	}
	checkPermissionsScratch(n, call, subscribe, o, served)
	return true
}

// checkPermissionsScratch runs the commands the drivers send on a scratch key
// beside o.key, with a short TTL, and deletes it; then what fencing, release
// notifications and the reads of status and Lock.TTL need on that key, each
// a warning, as with ACL DRYRUN. On a cluster's primary (served not nil) it
// runs CLUSTER SLOTS first, and the scratch key is one of a slot the primary
// serves.
func checkPermissionsScratch(n *nodeReport, call func(...any) *redis.Cmd, subscribe func(channel string) error, o doctorOptions, served func(slot int) bool) {
	if served != nil {
		if err := call("CLUSTER", "SLOTS").Err(); err != nil {
			n.add("permissions", statusFail, "CLUSTER SLOTS failed, so no lock can be taken on this node (every driver's cluster client reads the slot map with it first): %v", redisErrorText(err))
			return
		}
	}
	key, ok := scratchKey(o, served)
	if !ok {
		// Every key beside o.key is in o.key's slot.
		n.add("permissions", statusOK, "not checked here: ACL DRYRUN was not available, and the hash tag of %q puts its locks and the scratch key in slot %d, which another primary serves", o.key, driver.HashSlot(key))
		return
	}
	value := rand.Text()
	const ttl = "10000"
	steps := []struct {
		what string
		args []any
	}{
		{"SET NX PX", []any{"SET", key, value, "NX", "PX", ttl}},
		{"EVAL (GET, PEXPIRE)", []any{"EVAL", driver.ExtendScript().Source(), "1", key, value, ttl}},
		{"EVALSHA (GET, PEXPIRE)", []any{"EVALSHA", driver.ExtendScript().SHA1(), "1", key, value, ttl}},
		{"EVAL (GET, DEL)", []any{"EVAL", driver.ReleaseScript().Source(), "1", key, value}},
	}
	for _, s := range steps {
		if err := call(s.args...).Err(); err != nil {
			call("DEL", key)
			if why := writeRefusal(err); why != "" {
				n.add("writes", statusFail, "%s failed on the scratch key %q: %s", s.what, key, why)
				return
			}
			n.add("permissions", statusFail, "%s failed on the scratch key %q, so locks on %q would fail too: %v", s.what, key, o.key, redisErrorText(err))
			return
		}
	}
	n.add("permissions", statusOK, "SET, EVAL, EVALSHA, GET, PEXPIRE and DEL work on the scratch key %q (ACL DRYRUN was not available)", key)
	checkOptionalScratch(n, call, subscribe, o.prefix, key, served != nil)
}

// oldCountersDenied says what a user who may not read the fencing counters
// of earlier versions (driver.OldFenceKeys) risks: a warning, since where
// no earlier version fenced there are none to read.
const oldCountersDenied = "may not read the fencing counters of earlier versions (the counter of the slot that clients of every prefix shared, and the per-key one), which --fencing / WithFencing reads to keep tokens rising from where older clients left them: where an earlier version fenced these keys, a token can repeat one it granted (see the README's least-privilege rule); where none did, nothing is lost"

// checkOptionalScratch warns when the user may not use, on the scratch key
// key, what fencing, release notifications and the reads of status and
// Lock.TTL need. Nothing is written: the fencing scripts' keys are declared
// to a script that touches none (Redis checks a script's keys against the
// user when it is called), and the release notice goes to key's channel, on
// which no waiter listens.
func checkOptionalScratch(n *nodeReport, call func(...any) *redis.Cmd, subscribe func(channel string) error, prefix, key string, cluster bool) {
	// A server without a command (SPUBLISH before 7.0) is the version
	// check's business.
	refused := func(err error) bool { return err != nil && driver.PermanentCode(err) != "ERR unknown command" }
	fk := driver.PrefixFenceKey(prefix, key)
	if err := call("EVAL", "return 0", "2", key, fk).Err(); refused(err) {
		n.add("permissions", statusWarn, "the user may not keep fencing counters (%s), so --fencing / WithFencing fails: %v", fk, redisErrorText(err))
	}
	var oldDenied []string
	for _, name := range driver.OldFenceKeys(key, fk) {
		// Read, never shown. Only a refusal counts: a name another
		// primary of a cluster serves is not read by the script either.
		if err := call("GET", name).Err(); err != nil && driver.PermanentCode(err) == "NOPERM" {
			oldDenied = append(oldDenied, "GET "+strconv.Quote(name)+" ("+redisErrorText(err)+")")
		}
	}
	if len(oldDenied) > 0 {
		n.add("permissions", statusWarn, "the user %s: %s", oldCountersDenied, strings.Join(oldDenied, "; "))
	}
	ch := driver.ReleaseChannel(key)
	var denied []string
	if err := call("SPUBLISH", ch, "").Err(); refused(err) {
		denied = append(denied, "SPUBLISH ("+redisErrorText(err)+")")
	}
	if err := subscribe(ch); refused(err) {
		denied = append(denied, "SSUBSCRIBE ("+redisErrorText(err)+")")
	}
	if len(denied) > 0 {
		n.add("permissions", statusWarn, "the user may not publish or subscribe to %q, so waiters poll instead of hearing releases: %s", ch, strings.Join(denied, "; "))
	}
	if err := call("PTTL", key).Err(); refused(err) {
		n.add("permissions", statusWarn, "the user may not read the TTL of %q, so redlock status and Lock.TTL fail: %v", key, redisErrorText(err))
	}
	if cluster {
		if err := call("CLUSTER", "SHARDS").Err(); refused(err) {
			n.add("permissions", statusWarn, "the user %s: %v", clusterShardsDenied, redisErrorText(err))
		}
	}
}

// clusterShardsDenied says what a user who may not run CLUSTER SHARDS on a
// cluster's primary cannot do: a warning, since goredis never sends it, nor
// rueidis and valkey-go to servers before version 8.
const clusterShardsDenied = "may not run CLUSTER SHARDS, from which the cluster clients of rueidis and valkeygo read the slot map on servers of version 8 and later (Redis 8, Valkey 8): there, with those drivers, no lock can be taken on this node"

// scratchKey returns a key beside o.key, unique to this check, on which
// doctor may write. On a cluster's primary (served not nil) it is a key of a
// slot the primary serves; ok is false when there is none, because o.key's
// hash tag puts every key beside it in a slot of another primary.
func scratchKey(o doctorOptions, served func(slot int) bool) (key string, ok bool) {
	key = o.key + ":doctor:" + rand.Text()[:8]
	if served == nil {
		return key, true
	}
	if hasHashTag(o.key) {
		return key, served(driver.HashSlot(key))
	}
	base := key
	for i := 0; !served(driver.HashSlot(key)) && i < 1<<20; i++ {
		key = base + ":" + strconv.Itoa(i)
	}
	return key, served(driver.HashSlot(key))
}

// checkWrites takes and releases a lock on a scratch key, as the drivers
// do: SET NX PX, then the release script. The user's rights may allow it
// (ACL DRYRUN) while the server refuses every write: its memory is full
// under noeviction (OOM), min-replicas-to-write is not met (NOREPLICAS), or
// its last RDB save failed with stop-writes-on-bgsave-error (MISCONF).
func checkWrites(n *nodeReport, call func(...any) *redis.Cmd, o doctorOptions, served func(slot int) bool) {
	key, ok := scratchKey(o, served)
	if !ok {
		// No key of this primary to write: say so, as the permissions
		// check does on its scratch path, rather than leave it unnamed.
		n.add("writes", statusOK, "not checked here: the hash tag of %q puts its locks and the scratch key in slot %d, which another primary serves", o.key, driver.HashSlot(key))
		return
	}
	value := rand.Text()
	if err := call("SET", key, value, "NX", "PX", "10000").Err(); err != nil {
		why := writeRefusal(err)
		if why == "" {
			why = redisErrorText(err)
		}
		n.add("writes", statusFail, "SET NX PX failed on the scratch key %q, so every lock fails on this node: %s", key, why)
		return
	}
	if err := call("EVAL", driver.ReleaseScript().Source(), "1", key, value).Err(); err != nil {
		call("DEL", key)
		n.add("writes", statusFail, "the release script failed on the scratch key %q, so every release and extension fails on this node: %s", key, redisErrorText(err))
		return
	}
	n.add("writes", statusOK, "a lock taken and released on the scratch key %q (SET NX PX, then the release script)", key)
}

// writeRefusal explains an error with which a server refuses writes
// whoever sends them, or returns "" for any other error.
func writeRefusal(err error) string {
	msg := redisErrorText(err)
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "OOM":
		return msg + " (the memory is full under maxmemory-policy noeviction: every lock fails here until memory is freed or maxmemory raised)"
	case "NOREPLICAS":
		return msg + " (min-replicas-to-write is not met: the node takes no write until enough replicas are connected, each within min-replicas-max-lag)"
	case "MISCONF":
		return msg + " (the last RDB snapshot failed and stop-writes-on-bgsave-error is yes: the node takes no write until a save succeeds)"
	case "READONLY":
		return msg + " (a read-only replica: every node must be an independent master)"
	}
	return ""
}

// redisErrorText shortens a Redis error for the report, without the
// arguments that a reply to an unknown command echoes (a scratch lock's
// value among them: see replyerr.CutEcho).
func redisErrorText(err error) string {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		if i := strings.Index(msg, " script:"); i > 0 {
			msg = msg[:i]
		}
		return replyerr.CutEcho(msg)
	}
	return replyerr.CutEcho(err.Error())
}

// signed formats d with its sign: "+1.2ms", "-300µs".
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// hasHashTag reports whether key has a hash tag: text between its first "{"
// and the first "}" after it, which alone decides the key's cluster slot.
func hasHashTag(key string) bool {
	_, after, ok := strings.Cut(key, "{")
	return ok && strings.Index(after, "}") > 0
}
