package benchrun

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The files that WriteFiles writes.
const (
	ResultsFile = "RESULTS.md"
	ChartFile   = "results.svg"
)

// Headline is the case that the chart and the first table show: the setup of
// the targets.
const Headline = "Lock/nodes=5/lockers=64"

// KeptMarker starts the part of an existing RESULTS.md that WriteFiles keeps
// after the report it writes: results measured by other means (the Cluster
// case, run by hand with go test -bench, say).
const KeptMarker = "<!-- kept by benchrun: measured by hand, see each section -->"

// WriteFiles writes the report to dir as RESULTS.md and results.svg. The
// part of the RESULTS.md already in dir from KeptMarker on is kept, after
// the report.
func (r *Report) WriteFiles(dir string) error {
	path := filepath.Join(dir, ResultsFile)
	md := r.Markdown()
	if old, err := os.ReadFile(path); err == nil {
		if i := strings.Index(string(old), KeptMarker); i >= 0 {
			md += "\n" + string(old[i:])
		}
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ChartFile), r.SVG(), 0o644)
}

// find returns the result of contender of kind in the case caseParams
// ("Lock/nodes=5/lockers=64"), or nil.
func (r *Report) find(caseParams string, kind Kind, contender string) *Result {
	for _, res := range r.Results {
		if res.Case+"/"+res.Params == caseParams && res.Kind == kind && res.Contender == contender {
			return res
		}
	}
	return nil
}

// floorOf returns the floor of res's client in the same case and parameters.
func (r *Report) floorOf(res *Result) *Result {
	if res.Client == "" || res.Case != "Lock" {
		return nil
	}
	return r.find(res.Case+"/"+res.Params, KindFloor, res.Client)
}

// Markdown renders the report: what ran where, the targets, the headline case
// and every case.
func (r *Report) Markdown() string {
	var b strings.Builder
	e := r.Env
	cfg := r.Config
	fmt.Fprintf(&b, "# Benchmark results\n\n")
	rounds := fmt.Sprintf("%d rounds", cfg.Rounds)
	if cfg.Rounds == 1 {
		rounds = "one round"
	}
	fmt.Fprintf(&b, "Produced by `%s` on %s in %s: %s, each benchmark alone in its own\n",
		cfg.Command(), e.Date.Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second), rounds)
	fmt.Fprintf(&b, "process, the contenders of a case alternating (forward, then backward); every figure is the median of\n")
	fmt.Fprintf(&b, "the rounds. Regenerate with the same command; `cd bench && go run ./cmd/benchrun -h` lists the options.\n\n")
	if r.Incomplete != "" {
		fmt.Fprintf(&b, "**Incomplete:** %s. The figures are those of the runs made: each benchmark's median is over the rounds\n", r.Incomplete)
		fmt.Fprintf(&b, "it ran, which may be fewer than asked, and a benchmark that did not run is not listed.\n\n")
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s, %d logical CPUs, GOMAXPROCS %d, %s/%s |\n", e.CPU, e.CPUs, e.GOMAXPROCS, e.OS, e.Arch)
	fmt.Fprintf(&b, "| Load average | %s at the start, %s at the end (1, 5, 15 minutes) |\n", e.LoadStart, e.LoadEnd)
	fmt.Fprintf(&b, "| Go | %s |\n", e.Go)
	fmt.Fprintf(&b, "| Redis | redis-server %s: 5 local processes on 127.0.0.1, shared by every run (no persistence) |\n", e.Redis)
	fmt.Fprintf(&b, "| Library | %s |\n", e.Revision)
	var mods []string
	for _, m := range reportedModules {
		if v := e.Modules[m]; v != "" {
			mods = append(mods, m+" "+v)
		}
	}
	fmt.Fprintf(&b, "| Modules | %s |\n", strings.Join(mods, ", "))
	fmt.Fprintf(&b, "| Benchtime | %s per run; Handoff %s; Scale one run of %d locks held %v |\n\n", cfg.Benchtime, cfg.HandoffBenchtime, cfg.ScaleLocks, cfg.ScaleFor)
	fmt.Fprintf(&b, "![Throughput and p99 latency of lock+unlock per contender](%s)\n\n", ChartFile)

	targetTable(&b, "Targets", "Five local nodes, 64 concurrent lockers, lock+unlock, unless the target says otherwise.\n", r.Targets())
	if cfg.NoPeers {
		// Not a target missed: one not measured, which the table would
		// otherwise leave out without a word.
		fmt.Fprintf(&b, "**Peers left out** (`-no-peers`): package bench/peers (redsync, bsm/redislock, rueidislock) was neither built nor run, so no case shows a peer, and the target \"%s\" has no figures and is not checked.\n\n", peerTarget)
	}
	targetTable(&b, "Targets at scale", "Ratios within this run. Lone call: the floor is the same client doing the driver's commands by hand\n"+
		"(SET NX PX, then the drivers' release script, which also publishes the release, by EVALSHA), one operation of each\n"+
		"in turn (the Lone case). Hand-off with one waiter: in brackets, the driver in turn with its client's waiting floor (the\n"+
		"HandoffFloor case). Far: the figures against the same nodes through the proxy without delay take most of the proxy's own cost out.\n", r.ScaleTargets())

	groups := groupByCase(r.Results)
	for _, g := range groups {
		if g[0].Case+"/"+g[0].Params == Headline {
			fmt.Fprintf(&b, "## Headline: %s\n\n", title(g[0]))
			r.table(&b, g)
		}
	}
	fmt.Fprintf(&b, "## Every case\n\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "### %s\n\n", title(g[0]))
		r.table(&b, g)
	}
	hold, periods := r.scaleHold()
	b.WriteString(strings.Replace(methodNotes, scaleHoldNote, fmt.Sprintf("%v: %s", hold, periodsText(periods)), 1))
	return b.String()
}

// targetTable writes a section titled title with intro and a table of ts,
// or nothing when ts is empty.
func targetTable(b *strings.Builder, title, intro string, ts []Target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n| target | met | figures |\n|---|---|---|\n", title, intro)
	for _, t := range ts {
		met := "**no**"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", t.Name, met, t.Figures)
	}
	b.WriteString("\n")
}

// title describes a case.
func title(res *Result) string {
	p := make(map[string]string)
	for kv := range strings.SplitSeq(res.Params, "/") {
		k, v, _ := strings.Cut(kv, "=")
		p[k] = v
	}
	plural := func(n, word string) string {
		if n == "1" {
			return n + " " + word
		}
		return n + " " + word + "s"
	}
	where := plural(p["nodes"], "node") + ", " + plural(p["lockers"], "locker")
	code := " (`" + res.Case + "/…/" + res.Params + "`)"
	switch res.Case {
	case "Lock":
		return "Lock+unlock, uncontended: " + where + code
	case "Lone":
		return "Lone call, each driver and its client's floor in turn, operation by operation: " + where + code
	case "Extend":
		return "Extend: " + where + code
	case "Handoff":
		return "Hand-off of one key: " + plural(p["nodes"], "node") + ", " + plural(p["clients"], "client") + ", " +
			plural(p["lockers"], "locker") + " in all, each held 10ms" + code
	case "HandoffFloor":
		return "Hand-off to one waiter, each driver and its client's waiting floor in turn, ten hand-offs at a time: " +
			plural(p["nodes"], "node") + ", each held 10ms" + code
	case "Stalled":
		return "Lock+unlock with 2 of 5 nodes stalled: " + plural(p["lockers"], "locker") + code
	case "Far":
		if p["proxied"] != "" {
			return "Lock+unlock with " + p["proxied"] + " of " + p["nodes"] + " nodes through the Far case's proxy, without delay: " + plural(p["lockers"], "locker") + code
		}
		return "Lock+unlock with " + p["far"] + " of " + p["nodes"] + " nodes 40ms away (round trip): " + plural(p["lockers"], "locker") + code
	case "Scale":
		return "Locks held at once through Do by one client: " + p["locks"] + " on " + plural(p["nodes"], "node") + code
	case "Observe":
		return "Observation's cost, lock+unlock: " + where + "; no observer, a no-op Observer, redlockotel over no-op providers" + code
	}
	return res.Case + " " + res.Params
}

// table writes the table of one case.
func (r *Report) table(b *strings.Builder, g []*Result) {
	if g[0].Case == "Scale" {
		r.scaleTable(b, g)
		return
	}
	failed := false
	for _, res := range g {
		failed = failed || res.Median[FailedPerOp] > 0
	}
	handoff := g[0].Case == "Handoff" || g[0].Case == "HandoffFloor"
	inTurn := g[0].Case == "Lone" || g[0].Case == "HandoffFloor" // the floor's figures are in the driver's
	lat := "p50 | p99 | max"
	sep := "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	if handoff {
		lat = "hand-off p50 | hand-off p99 | hand-off max | wait p50 | longest wait | longest ÷ p50"
		sep += "--:|--:|--:|"
	}
	fmt.Fprintf(b, "| contender | ops/s | ns/op | × floor | %s | allocs/op | B/op |", lat)
	if failed {
		b.WriteString(" failed/op |")
		sep += "--:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, res := range g {
		m := res.Median
		ratio := "–"
		if f := r.floorOf(res); f != nil && f != res && f.Median[OpsPerSec] > 0 {
			ratio = fmt.Sprintf("%.2f×", m[OpsPerSec]/f.Median[OpsPerSec])
		} else if f == res {
			ratio = "1.00×"
		} else if inTurn && m[XFloor] > 0 {
			ratio = fmt.Sprintf("%.2f× (p50; floor %s)", m[XFloor], formatNs(m[FloorP50]))
		}
		label := res.Label()
		if res.Kind == KindDriver {
			label = "**" + label + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |", label, formatCount(m[OpsPerSec]), formatCount(m[NsPerOp]),
			ratio, formatNs(m[P50]), formatNs(m[P99]), formatNs(m[Max]))
		if handoff {
			starve := "–"
			if m[WaitP50] > 0 {
				starve = fmt.Sprintf("%.1f×", m[WaitMax]/m[WaitP50])
			}
			fmt.Fprintf(b, " %s | %s | %s |", formatNs(m[WaitP50]), formatNs(m[WaitMax]), starve)
		}
		if inTurn {
			b.WriteString(" – | – |") // they count the floor's operations too
		} else {
			fmt.Fprintf(b, " %.0f | %.0f |", m[AllocsPerOp], m[BytesPerOp])
		}
		if failed {
			fmt.Fprintf(b, " %.2g |", m[FailedPerOp])
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// scaleTable writes the table of the Scale case.
func (r *Report) scaleTable(b *strings.Builder, g []*Result) {
	b.WriteString("| contender | held | lost | Do errors | bytes per held lock | CPU per held lock per second | acquire all | release all |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, res := range g {
		m := res.Median
		cpu := "–"
		if m[CPUPerLockSec] > 0 {
			cpu = formatNs(m[CPUPerLockSec])
		}
		fmt.Fprintf(b, "| **%s** | %s | %s | %s | %s | %s | %s | %s |\n", res.Label(), formatCount0(m[Held]), formatCount0(m[Lost]),
			formatCount0(m[Errors]), formatCount0(m[BytesPerLock]), cpu, formatNs(m[AcquireNs]), formatNs(m[ReleaseNs]))
	}
	b.WriteString("\n")
}

// formatCount0 writes n as formatCount does, but a whole number below 100
// without a decimal.
func formatCount0(n float64) string {
	if n < 100 && n == math.Trunc(n) {
		return strconv.FormatFloat(n, 'f', 0, 64)
	}
	return formatCount(n)
}

// formatCount writes n with thousands separators: 12,345; below 100, with
// one decimal.
func formatCount(n float64) string {
	if n < 100 {
		return strconv.FormatFloat(n, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// formatNs writes a duration in nanoseconds with three significant digits in
// µs, ms or s.
func formatNs(ns float64) string {
	switch {
	case ns <= 0:
		return "–"
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e9) + " s"
}

// sig3 formats v (1 ≤ v < 1000) with three significant digits.
func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// scaleHoldNote stands in methodNotes for the Scale case's hold time, which
// Markdown writes there: the report's -scale-for and the extension periods
// it spans.
const scaleHoldNote = "SCALE-HOLD"

// methodNotes close RESULTS.md.
const methodNotes = `## How these figures are made

- **Operation.** Lock, Stalled: one Lock then one Unlock, each locker on a key of its own, all lockers
  sharing one client (one process). Extend: one Extend of a held lock. Handoff: one hand-off of a
  contended key between lockers spread over several clients (as processes): 4 clients of one locker,
  2 clients of one (a holder and one waiter), or 8 clients of 4; the holder keeps the key 10ms,
  releases it, and waits until another locker holds it before it competes again.
- **ops/s** is operations per second of wall time over all lockers; **ns/op**, go test's figure, is
  its inverse (wall time per operation of all lockers together, not one operation's latency). **p50, p99, max** are the latencies of single operations; for Handoff, of the hand-off:
  from the start of the holder's Unlock to the return of the next holder's Lock. With 64 lockers on
  two cores, latency is mostly queueing: compare it between contenders, not with the one-locker cases.
- **× floor** is the contender's throughput over its client's floor in the same case: the floor does
  the driver's commands by hand, SET key value NX PX and then the drivers' release script (which also
  publishes the release on the key's channel, for waiters in other clients) by EVALSHA, on every
  node at once (a goroutine per node) with the bare client and no lock logic; **floor (DEL)** releases
  with a plain DEL instead, the least a client can do. For a driver, that ratio is what the library costs; the drivers configure their
  own clients, so the cost of their settings is part of it. The floors and the peers share the bare
  clients of package bench (each client's defaults, pools of 64 connections, timeouts as go-redis').
- **allocs/op, B/op** count every allocation of the process during the timed part, including the
  clients' and the background goroutines'.
- **Peers** run with their defaults except the TTL (10s for every contender) and: redsync with unlimited
  tries (it waits 50–250ms between tries and, without WithFailFast, for every node); bsm/redislock
  with ExponentialBackoff(10ms, 250ms), since it does not retry by default; rueidislock with one key
  (KeyMajority 1) and client-side caching, by which waiters are woken. bsm/redislock and rueidislock
  lock one node, so they appear in the one-node cases only; rueidislock extends by itself, so it has
  no Extend figures.
- **Lone:** one caller locks and unlocks with the driver and with its client's floor in turn, operation
  by operation on the same servers, the one that goes first alternating; **× floor** is then the floor's
  p50 over the driver's (the driver's speed as a share of its client's), and ops/s, ns/op and the
  latencies are the driver's operations alone. Made in turn, both meet the machine in the same state:
  the Lock and floor runs at one node, one after the other, moved between 53 and 180 µs p50 from run
  to run on this shared machine. allocs/op and B/op are not shown: they would count both.
- **Stalled:** two of five nodes are redis-server processes stopped with SIGSTOP after the client
  connected to them; every operation is given a 1s context, which bounds it for every contender but
  redsync over redigo: its commands take no context, so its operations end at the redigo pool's 3s
  read timeout. **failed/op**, when shown, is the
  share of operations that returned an error (the run goes on; a benchmark fails only above 10%).
- **Observe:** the Lock case for the memory driver (the library alone, no network) and rueidis,
  each without observers, with a no-op ` + "`redlock.Observer`" + ` ("+observer"), and with
  ` + "`redlockotel.Instrument`" + ` over OpenTelemetry's no-op tracer and meter providers ("+redlockotel").
- **Handoff** also reports how long each locker waited in Lock: the median and the longest, whose ratio
  shows a starved waiter. clients=2/lockers=2 is a holder and one waiter; clients=8/lockers=32 is 8
  clients of 4 waiters each on one key.
- **HandoffFloor:** Handoff's holder and one waiter, with the driver and with its client's waiting
  floor in turn, ten hand-offs of each at a time on the same servers. The waiting floor is the least a
  Redlock waiter can do by hand with the bare client: SET NX PX on every node at once, the key held at
  a majority, at each release notice (SSUBSCRIBE to the key's channel on every node, kept) and at the
  polls of a Client's default Backoff, the nodes it got released by the script when it got too few;
  no lock logic beyond that. **× floor** is the floor's hand-off p50 over the driver's, as for Lone;
  ops/s, ns/op and the hand-off figures are the driver's alone, as Handoff's.
  On these shared 2-core machines the hand-off is bounded by waking idle cores: on a quiet machine one
  round trip to a redis-server made right after the last takes about 15 µs, one made after 10ms idle
  about 200 µs (under load both are slower, and closer; the Idle case, ` + "`go test -run '^$' -bench '^BenchmarkIdle$' .`" + `
  in bench/, measures it), and every hand-off follows the holder's 10ms hold.
- **Far:** two of five nodes are reached through a proxy in the benchmark's process that delays every
  byte by 20ms each way (a 40ms round trip); compare its p50 with Lock's at 5 nodes and 1 locker.
  proxied=2 reaches the same two nodes through the same proxy without a delay: the proxy's own cost
  (a read, a write and two wake-ups per chunk, on the two cores the client and servers share), which
  a far network does not put on the client's machine; far=2 against proxied=2 takes most of it out, not all
  (without a delay the proxy's work falls inside each operation, with one it falls 20ms later, in larger
  chunks: proxied=2 can be the slower of the two).
- **Scale:** N concurrent Do calls on five nodes by one client (TTL 10s, an extension every TTL/3), each
  fn waiting until all hold their lock and then for the hold time (` + scaleHoldNote + `);
  one run is one operation. **bytes per held lock** is the heap and stacks in use while all are held,
  less those of the same N goroutines while their fn waits, each calling fn directly rather than through
  Do (fn's own), over N; **CPU per held lock per second** is the
  process's CPU time during the hold (getrusage) over N × the hold time; **lost** counts fn contexts
  canceled with ErrLockLost; **Do errors** counts Do calls that returned an error. Size it with
  ` + "`-scale-locks`" + ` and ` + "`-scale-for`" + `, or ` + "`REDLOCK_BENCH_SCALE_LOCKS`" + ` and ` + "`REDLOCK_BENCH_SCALE_FOR`" + ` for go test.
- One case alone: ` + "`go test -run '^$' -bench 'Lock/rueidis/nodes=5/lockers=64' -benchmem . (in bench/)`" + `
  (peers: the same in bench/peers); add ` + "`-cpuprofile cpu.out -memprofile mem.out`" + ` to profile.
`
