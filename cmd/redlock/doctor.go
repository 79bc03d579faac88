package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/plural"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redlock"
)

// status is the verdict of one check.
type status string

// The verdicts, from best to worst. A fail makes doctor exit with 1.
const (
	statusOK   status = "ok"
	statusWarn status = "warn" // safe, with a caveat the message explains
	statusFail status = "fail" // unsafe, or the node cannot take part
)

// worse returns the worse of two verdicts.
func worse(a, b status) status {
	rank := map[status]int{statusOK: 0, statusWarn: 1, statusFail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// check is one finding about a node or about the set.
type check struct {
	Name    string `json:"name"`
	Status  status `json:"status"`
	Message string `json:"message"`
}

// nodeReport is what doctor found about one node. For a node that is a
// Redis Cluster, Server, Version and RunID are those of one primary, the
// first by address that answered INFO (see mergeServers).
type nodeReport struct {
	// Addr is the address as given, with any password removed.
	Addr      string  `json:"addr"`
	Reachable bool    `json:"reachable"`
	RTTMillis float64 `json:"rtt_ms,omitempty"`
	Server    string  `json:"server,omitempty"` // "redis" or "valkey"
	Version   string  `json:"version,omitempty"`
	Role      string  `json:"role,omitempty"`
	RunID     string  `json:"run_id,omitempty"`
	// Shards describes a node that is a Redis Cluster: one entry per shard.
	Shards []shardReport `json:"shards,omitempty"`
	// ClockOffsetMillis is the node's clock minus this machine's, known to
	// within ClockErrorMillis (half the round trip of TIME).
	ClockOffsetMillis *float64 `json:"clock_offset_ms,omitempty"`
	ClockErrorMillis  float64  `json:"clock_error_ms,omitempty"`
	Status            status   `json:"status"`
	Checks            []check  `json:"checks"`

	hostPort string
	// addr is the address as given, password included, which Addr masks;
	// a cluster's seeds after the first are in Addr alone.
	addr redisaddr.Addr
	// down says why a node that did not answer PING did not, in the
	// report's header, when it is not "unreachable": "authentication
	// refused", "TLS handshake failed".
	down        string
	clusterIDs  []string // the node IDs of a cluster node, for duplicates
	clockOffset time.Duration
	clockError  time.Duration
}

func (n *nodeReport) add(name string, st status, format string, args ...any) {
	n.Checks = append(n.Checks, check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	n.Status = worse(n.Status, st)
}

// doctorReport is doctor's whole finding, as --json prints it.
type doctorReport struct {
	// Status is the worst verdict of every check.
	Status status        `json:"status"`
	Quorum int           `json:"quorum"`
	Nodes  []*nodeReport `json:"nodes"`
	// Checks are the findings about the set of nodes as a whole.
	Checks []check `json:"checks"`
}

func (r *doctorReport) add(name string, st status, format string, args ...any) {
	r.Checks = append(r.Checks, check{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
}

type doctorOptions struct {
	nodeFlags
	key     string
	prefix  string // put before key, as run and hold put it before KEY
	ttl     time.Duration
	timeout time.Duration
	maxSkew time.Duration
	json    bool

	nodeTimeout time.Duration // the default for locks of ttl (see lockNodeTimeout)
}

func doctorCommand() *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that a set of Redis nodes is fit for Redlock",
		Long: `doctor connects to every node (with go-redis, whatever --driver run uses) and
checks each node and the set:

  reachable     PING answers; the round trip (median of 5) against the node
                timeout that --ttl implies (TTL/10, at most 200ms)
  version       the server and its version (SET NX PX needs Redis 2.6.12;
                release notifications, SPUBLISH, 7.0)
  role          a replica is unsafe: replication is asynchronous, so a
                promoted replica can lack a lock its primary granted
  eviction      maxmemory with any maxmemory-policy but noeviction can drop
                lock keys: unsafe
  persistence   without appendonly yes and appendfsync always (and
                no-appendfsync-on-rewrite no, which otherwise skips the
                fsync while a BGSAVE or BGREWRITEAOF runs), a node that
                crashes forgets its locks and fencing counters: a warning
                to keep a crashed node down for longer than the TTL before
                it rejoins (which saves the locks, not the counters: with
                --fencing a token can repeat) or to set appendfsync always;
                without appendonly, the RDB snapshots (save) are named
  clock         the node's clock (TIME) against this machine's
  permissions   that the user may run what the drivers send on --key (after
                --prefix, as run and hold put it before KEY): SET,
                EVAL, EVALSHA and, inside the scripts, GET, PEXPIRE and DEL
                (with ACL DRYRUN, or else on a scratch key beside --key);
                fencing counters (and the reads of earlier versions'),
                release notifications, the reads of status and Lock.TTL
                (PTTL) and INFO (with ACL DRYRUN: without it, one server
                under two addresses goes unseen) are warnings; on a cluster's
                primaries, CLUSTER SLOTS too (every cluster client reads
                the slot map first), and CLUSTER SHARDS as a warning
                (rueidis' and valkeygo's read the map with it from
                servers of version 8 and later)
  writes        a lock taken and released on a scratch key beside --key
                (SET NX PX, then the release script): a server that
                refuses writes whoever sends them fails, with the reason
                (OOM: memory full under noeviction; NOREPLICAS:
                min-replicas-to-write not met; MISCONF: a failed RDB
                snapshot with stop-writes-on-bgsave-error yes; READONLY)
  cluster       for a node given as a cluster (?cluster=true): its shards
                (from the first seed that answers, which may be a replica),
                replicas a failover could promote (a warning), slots no
                shard serves (unsafe), primaries that disagree on the slot
                map (a warning), a seed of another cluster (unsafe: the
                clients pick a seed at random, so two could lock on
                different clusters; the drivers refuse such a node) or
                that does not answer (a warning);
                the checks above run on every primary
                that serves slots, each with the worst verdict, naming the
                primaries that gave it
  the set       the same server under two addresses (same run_id), or the
                same cluster (a node ID in both): unsafe;
                an even or small node count: a warning; more than 64 nodes,
                which no client takes: unsafe; clock skew between the
                nodes; too few reachable nodes for a quorum: unsafe

It exits with 1 when any check fails (unsafe, or a node that cannot be
reached or used), with 0 otherwise (warnings included), and with 2 for bad
flags or no nodes. Passwords are never printed.

` + envHelp("nodes", "key", "prefix", "ttl", "timeout", "max-skew", "json"),
		Example: `  redlock doctor --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  REDLOCK_NODES=redis://locker:secret@10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379 redlock doctor --prefix lock: --key jobs:nightly
  redlock doctor --json | jq '.nodes[] | {addr, status}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	o.addNodes(cmd)
	f.StringVar(&o.key, "key", "redlock:doctor", "a lock key (or one like it) on which to check the user's permissions")
	f.StringVar(&o.prefix, "prefix", "", "the --prefix that run and hold are given: put before --key on the nodes, so that the permissions are checked in the namespace of their locks")
	f.DurationVar(&o.ttl, "ttl", redlock.DefaultTTL, "the TTL your locks use: sizes the round-trip and persistence advice")
	f.DurationVar(&o.timeout, "timeout", 2*time.Second, "bounds the connection and each command to one node")
	f.DurationVar(&o.maxSkew, "max-skew", time.Second, "warn when clocks differ by more than this")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	return withEnv(cmd)
}

// lockNodeTimeout returns the node timeout that locks of ttl get by
// default, or the library's error for such locks, as run and hold get it
// from Open (WithTTL's rules: at most redlock.MaxTTL, above its drift
// allowance, room for an extension), from a Client on an in-process node so
// that doctor applies the library's rules rather than a copy of them.
func lockNodeTimeout(ttl time.Duration) (time.Duration, error) {
	c, err := redlock.New([]driver.Node{memory.New()}, redlock.WithTTL(ttl))
	if err != nil {
		return 0, err
	}
	return c.NodeTimeout(), c.Close()
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s: takes no arguments, got %q (see %s --help)", subcommand(cmd), args, cmd.CommandPath())
	}
	return nil
}

func runDoctor(ctx context.Context, w io.Writer, o doctorOptions) error {
	if o.ttl > 0 {
		var err error
		if o.nodeTimeout, err = lockNodeTimeout(o.ttl); err != nil {
			// As run, hold and the library refuse it: no lock has it.
			return usageErrorf("doctor: --ttl %v: %v", o.ttl, err)
		}
	}
	switch {
	case o.ttl <= 0:
		return usageErrorf("doctor: --ttl %v is not positive", o.ttl)
	case o.timeout <= 0:
		return usageErrorf("doctor: --timeout %v is not positive", o.timeout)
	case o.maxSkew < 0:
		return usageErrorf("doctor: --max-skew %v is negative", o.maxSkew)
	case o.key == "":
		return usageErrorf("doctor: --key is empty")
	}
	if err := keyLenError("doctor", o.prefix, o.key); err != nil {
		return err // a key no lock can take: run, hold and status refuse it too
	}
	o.key = o.prefix + o.key // the key on the nodes, as the drivers get it
	raw, err := o.addrs("doctor")
	if err != nil {
		return err
	}
	addrs := make([]redisaddr.Node, len(raw))
	for i, s := range raw {
		if addrs[i], err = redisaddr.ParseNode(s); err != nil {
			return usageErrorf("doctor: address %d: %v", i+1, err)
		}
	}
	rep := &doctorReport{Quorum: len(addrs)/2 + 1, Nodes: make([]*nodeReport, len(addrs))}
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			if !a.Cluster {
				rep.Nodes[i] = probeNode(ctx, a.Addr, o, nil)
				return
			}
			rep.Nodes[i] = probeClusterNode(ctx, a, o)
		})
	}
	wg.Wait()
	checkSet(rep, o)
	rep.Status = statusOK
	for _, n := range rep.Nodes {
		rep.Status = worse(rep.Status, n.Status)
	}
	for _, c := range rep.Checks {
		rep.Status = worse(rep.Status, c.Status)
	}

	if o.json {
		enc := json.NewEncoder(jsonWriter{w})
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printDoctor(w, rep)
	}
	if rep.Status == statusFail {
		return exitWith(exitFailure, nil)
	}
	return nil
}

// sharesID returns an ID that both a and b contain, or "".
func sharesID(a, b []string) string {
	for _, id := range a {
		if slices.Contains(b, id) {
			return id
		}
	}
	return ""
}

// checkSet adds the checks of the set as a whole.
func checkSet(rep *doctorReport, o doctorOptions) {
	n := len(rep.Nodes)
	switch {
	case n > redlock.MaxNodes:
		rep.add("count", statusFail, "%d nodes are more than %d, the most a Client takes (redlock.MaxNodes): run and hold refuse them", n, redlock.MaxNodes)
	case n == 1:
		rep.add("count", statusWarn, "1 node: no fault tolerance; a crash or restart of it loses every lock; use 3 or 5 independent nodes")
	case n%2 == 0:
		fewer := fmt.Sprintf("%d nodes do", n-1)
		if n == 2 {
			fewer = "1 node does"
		}
		rep.add("count", statusWarn, "%d nodes: an even count tolerates no more failures (%d) than %s; use an odd count", n, n-rep.Quorum, fewer)
	case n < 3:
		rep.add("count", statusWarn, "%d nodes: use 3 or 5 independent nodes", n)
	default:
		rep.add("count", statusOK, "%d nodes, quorum %d: tolerates %d failed %s", n, rep.Quorum, n-rep.Quorum, plural.Nodes(n-rep.Quorum))
	}

	dup := false
	for i, a := range rep.Nodes {
		for _, b := range rep.Nodes[i+1:] {
			switch {
			case a.hostPort != "" && a.hostPort == b.hostPort && a.addr == b.addr && a.Addr == b.Addr:
				rep.add("duplicates", statusFail, "%s and %s are the same address: the node would count twice towards the quorum", a.Addr, b.Addr)
				dup = true
			case a.hostPort != "" && a.hostPort == b.hostPort:
				// Another database or user of one server: a crash takes
				// both down.
				rep.add("duplicates", statusFail, "%s and %s reach the same server, at %s: it would count twice towards the quorum", a.Addr, b.Addr, a.hostPort)
				dup = true
			case sharesID(a.clusterIDs, b.clusterIDs) != "":
				rep.add("duplicates", statusFail, "%s and %s are the same Redis Cluster (node %s in both): it would count twice towards the quorum; %s", a.Addr, b.Addr, sharesID(a.clusterIDs, b.clusterIDs), clusterSeedsHint)
				dup = true
			case a.RunID != "" && a.RunID == b.RunID:
				rep.add("duplicates", statusFail, "%s and %s are the same server (run_id %s): it would count twice towards the quorum", a.Addr, b.Addr, a.RunID)
				dup = true
			}
		}
	}
	if !dup {
		unknown, clusters := 0, 0
		for _, nr := range rep.Nodes {
			if nr.RunID == "" {
				unknown++
			}
			if len(nr.Shards) > 0 {
				clusters++
			}
		}
		switch {
		case unknown == 0 && clusters > 0:
			// A cluster is told apart by its nodes' IDs, not by the
			// run_id of the one server that answered first.
			rep.add("duplicates", statusOK, "%d distinct %s (servers by run_id, Redis Clusters by node ID)", n, plural.Nodes(n))
		case unknown == 0 && n == 1:
			rep.add("duplicates", statusOK, "1 distinct server (run_id)")
		case unknown == 0:
			rep.add("duplicates", statusOK, "%d distinct servers (run_id)", n)
		default:
			rep.add("duplicates", statusWarn, "no duplicate found, but %d %s gave no run_id to compare", unknown, plural.Nodes(unknown))
		}
	}

	reachable := 0
	for _, nr := range rep.Nodes {
		if nr.Reachable {
			reachable++
		}
	}
	if reachable < rep.Quorum {
		rep.add("quorum", statusFail, "only %d of %d %s reachable: no lock can be granted (quorum %d)", reachable, n, plural.Nodes(n), rep.Quorum)
	}

	var lo, hi *nodeReport
	for _, nr := range rep.Nodes {
		if nr.ClockOffsetMillis == nil {
			continue
		}
		if lo == nil || nr.clockOffset < lo.clockOffset {
			lo = nr
		}
		if hi == nil || nr.clockOffset > hi.clockOffset {
			hi = nr
		}
	}
	if lo != nil && lo != hi {
		spread := hi.clockOffset - lo.clockOffset
		margin := hi.clockError + lo.clockError
		msg := fmt.Sprintf("the nodes' clocks differ by up to %v (±%v), %s ahead of %s",
			roundDuration(spread), roundDuration(margin), hi.Addr, lo.Addr)
		if spread-margin > o.maxSkew {
			rep.add("clock skew", statusWarn, "%s: more than --max-skew %v. Redlock needs clocks that run at the same rate, not the same time, but clocks this far apart are not synchronized and may be stepped, and a clock stepped forward on a node expires its locks early; slew clocks (chrony, ntpd), never step them", msg, o.maxSkew)
		} else {
			rep.add("clock skew", statusOK, "%s", msg)
		}
	}
}

// printDoctor writes the readable report.
func printDoctor(w io.Writer, rep *doctorReport) {
	label := map[status]string{statusOK: "ok", statusWarn: "WARN", statusFail: "FAIL"}
	for _, n := range rep.Nodes {
		var facts []string
		if n.Server != "" || n.Version != "" {
			facts = append(facts, strings.TrimSpace(n.Server+" "+n.Version))
		}
		if n.Role != "" {
			facts = append(facts, n.Role)
		}
		switch {
		case n.Reachable && n.RTTMillis > 0:
			facts = append(facts, fmt.Sprintf("rtt %.2fms", n.RTTMillis))
		case n.Reachable: // a cluster none of whose primaries was checked
			facts = append(facts, "reachable")
		case n.down != "":
			facts = append(facts, n.down)
		default:
			facts = append(facts, "unreachable")
		}
		// The server, version and role are the node's words (INFO).
		fmt.Fprintf(w, "%s  %s  %s\n", label[n.Status], n.Addr, escapeUnprintable(strings.Join(facts, ", ")))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range n.Checks {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", label[c.Status], c.Name, escapeUnprintable(c.Message))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s  the set of %d %s\n", label[setStatus(rep)], len(rep.Nodes), plural.Nodes(len(rep.Nodes)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", label[c.Status], c.Name, escapeUnprintable(c.Message))
	}
	tw.Flush()
	fmt.Fprintln(w)

	fails, warns := 0, 0
	count := func(cs []check) {
		for _, c := range cs {
			switch c.Status {
			case statusFail:
				fails++
			case statusWarn:
				warns++
			}
		}
	}
	for _, n := range rep.Nodes {
		count(n.Checks)
	}
	count(rep.Checks)
	switch rep.Status {
	case statusFail:
		fmt.Fprintf(w, "FAIL: %d check(s) failed, %d warning(s). Fix the failures before trusting these nodes with locks.\n", fails, warns)
	case statusWarn:
		fmt.Fprintf(w, "ok, with %d warning(s): safe under the caveats above.\n", warns)
	default:
		fmt.Fprintln(w, "ok: every check passed.")
	}
}

func setStatus(rep *doctorReport) status {
	st := statusOK
	for _, c := range rep.Checks {
		st = worse(st, c.Status)
	}
	return st
}

// roundDuration rounds d for display: to 10µs below 10ms, else to 100µs.
func roundDuration(d time.Duration) time.Duration {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
