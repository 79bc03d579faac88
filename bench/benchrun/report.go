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
	fmt.Fprintf(&b, "Produced by `cd bench && go run ./cmd/benchrun` on %s in %s: %d rounds, each benchmark alone in its own\n",
		e.Date.Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second), cfg.Rounds)
	fmt.Fprintf(&b, "process, the contenders of a case alternating (forward, then backward); every figure is the median of\n")
	fmt.Fprintf(&b, "the rounds. Regenerate with the same command; `cd bench && go run ./cmd/benchrun -h` lists the options.\n\n")
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
	fmt.Fprintf(&b, "| Benchtime | %s per run; Handoff %s |\n\n", cfg.Benchtime, cfg.HandoffBenchtime)
	fmt.Fprintf(&b, "![Throughput and p99 latency of lock+unlock per contender](%s)\n\n", ChartFile)

	if t := r.Targets(); len(t) > 0 {
		fmt.Fprintf(&b, "## Targets\n\n")
		fmt.Fprintf(&b, "Five local nodes, 64 concurrent lockers, lock+unlock, unless the target says otherwise.\n\n")
		fmt.Fprintf(&b, "| target | met | figures |\n|---|---|---|\n")
		for _, t := range t {
			met := "**no**"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Name, met, t.Figures)
		}
		b.WriteString("\n")
	}

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
	b.WriteString(methodNotes)
	return b.String()
}

// title describes a case.
func title(res *Result) string {
	p := strings.NewReplacer("nodes=", "", "lockers=", "", "/", " ").Replace(res.Params)
	var nodes, lockers string
	fmt.Sscan(p, &nodes, &lockers)
	plural := func(n, word string) string {
		if n == "1" {
			return n + " " + word
		}
		return n + " " + word + "s"
	}
	where := plural(nodes, "node") + ", " + plural(lockers, "locker")
	switch res.Case {
	case "Lock":
		return "Lock+unlock, uncontended: " + where + " (`Lock/…/" + res.Params + "`)"
	case "Extend":
		return "Extend: " + where + " (`Extend/…/" + res.Params + "`)"
	case "Handoff":
		return "Hand-off of one key: " + where + ", each held 10ms (`Handoff/…/" + res.Params + "`)"
	case "Stalled":
		return "Lock+unlock with 2 of 5 nodes stalled: " + plural(lockers, "locker") + " (`Stalled/…/" + res.Params + "`)"
	case "Observe":
		return "Observation's cost, lock+unlock: " + where + "; no observer, a no-op Observer, redlockotel over no-op providers (`Observe/…/" + res.Params + "`)"
	}
	return res.Case + " " + res.Params
}

// table writes the table of one case.
func (r *Report) table(b *strings.Builder, g []*Result) {
	failed := false
	for _, res := range g {
		failed = failed || res.Median[FailedPerOp] > 0
	}
	lat := "p50 | p99 | max"
	switch g[0].Case {
	case "Handoff":
		lat = "hand-off p50 | hand-off p99 | hand-off max"
	}
	fmt.Fprintf(b, "| contender | ops/s | ns/op | × floor | %s | allocs/op | B/op |", lat)
	sep := "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	if failed {
		b.WriteString(" failed/op |")
		sep += "--:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, res := range g {
		m := res.Median
		ratio := "–"
		if f := r.floorOf(res); f != nil && f.Median[OpsPerSec] > 0 {
			ratio = fmt.Sprintf("%.2f×", m[OpsPerSec]/f.Median[OpsPerSec])
		}
		label := res.Label()
		if res.Kind == KindDriver {
			label = "**" + label + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f |", label, formatCount(m[OpsPerSec]), formatCount(m[NsPerOp]),
			ratio, formatNs(m[P50]), formatNs(m[P99]), formatNs(m[Max]), m[AllocsPerOp], m[BytesPerOp])
		if failed {
			fmt.Fprintf(b, " %.2g |", m[FailedPerOp])
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
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

// methodNotes close RESULTS.md.
const methodNotes = `## How these figures are made

- **Operation.** Lock, Stalled: one Lock then one Unlock, each locker on a key of its own, all lockers
  sharing one client (one process). Extend: one Extend of a held lock. Handoff: one hand-off of a
  contended key between four lockers, each with its own client (as four processes); the holder keeps
  the key 10ms, releases it, and waits until another locker holds it before it competes again.
- **ops/s** is operations per second of wall time over all lockers; **ns/op**, go test's figure, is
  its inverse (wall time per operation of all lockers together, not one operation's latency). **p50, p99, max** are the latencies of single operations; for Handoff, of the hand-off:
  from the start of the holder's Unlock to the return of the next holder's Lock. With 64 lockers on
  two cores, latency is mostly queueing: compare it between contenders, not with the one-locker cases.
- **× floor** is the contender's throughput over its client's floor in the same case: the floor does
  SET key value NX PX and then DEL on every node at once (a goroutine per node) with the bare client
  and no lock logic. For a driver, that ratio is what the library costs; the drivers configure their
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
- **Stalled:** two of five nodes are redis-server processes stopped with SIGSTOP after the client
  connected to them; every operation is bounded by a 1s context. **failed/op**, when shown, is the
  share of operations that returned an error (the run goes on; a benchmark fails only above 10%).
- **Observe:** the Lock case for the memory driver (the library alone, no network) and rueidis,
  each without observers, with a no-op ` + "`redlock.Observer`" + ` ("+observer"), and with
  ` + "`redlockotel.Instrument`" + ` over OpenTelemetry's no-op tracer and meter providers ("+redlockotel").
- One case alone: ` + "`go test -run '^$' -bench 'Lock/rueidis/nodes=5/lockers=64' -benchmem . (in bench/)`" + `
  (peers: the same in bench/peers); add ` + "`-cpuprofile cpu.out -memprofile mem.out`" + ` to profile.
`
