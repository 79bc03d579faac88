package benchrun

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/redistest"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/go-redlock/redlock/bench
cpu: Example CPU @ 3.0GHz
BenchmarkLock/rueidis/nodes=5/lockers=64-2         	   15069	    141988 ns/op	      7043 ops/s	   8482677 p50-ns	  20209083 p99-ns	    2106 B/op	      37 allocs/op
--- BENCH: BenchmarkLock/goredis/nodes=5/lockers=64-2
    measure.go:90: 3 of 4000 operations failed; the first: boom
BenchmarkLock/goredis/nodes=5/lockers=64-2         	    4000	    300000 ns/op	         0.00075 failed/op	      3333 ops/s	   100 p50-ns	   200 p99-ns	    6000 B/op	     150 allocs/op
BenchmarkFloor/redsync-goredis/nodes=1/lockers=1   	     100	     10000 ns/op
PASS
`

func TestParseLines(t *testing.T) {
	lines, cpu := ParseLines(sampleOutput)
	if cpu != "Example CPU @ 3.0GHz" {
		t.Errorf("cpu = %q, want the cpu: line's value", cpu)
	}
	if len(lines) != 3 {
		t.Fatalf("ParseLines found %d result lines, want 3: %+v", len(lines), lines)
	}
	l := lines[0]
	if l.Name != "Lock/rueidis/nodes=5/lockers=64" || l.N != 15069 {
		t.Errorf("first line = %q N=%d, want the name without Benchmark and -2, and N 15069", l.Name, l.N)
	}
	want := map[string]float64{NsPerOp: 141988, OpsPerSec: 7043, P50: 8482677, P99: 20209083, BytesPerOp: 2106, AllocsPerOp: 37}
	for u, v := range want {
		if l.Metrics[u] != v {
			t.Errorf("metric %s = %v, want %v", u, l.Metrics[u], v)
		}
	}
	if got := lines[1].Metrics[FailedPerOp]; got != 0.00075 {
		t.Errorf("failed/op = %v, want 0.00075", got)
	}
	if lines[2].Name != "Floor/redsync-goredis/nodes=1/lockers=1" {
		t.Errorf("a name without a GOMAXPROCS suffix became %q", lines[2].Name)
	}
}

func TestBenchPattern(t *testing.T) {
	name := "Lock/redsync-rueidis/nodes=5/lockers=64"
	p := benchPattern(name)
	levels := strings.Split(p, "/")
	full := strings.Split("BenchmarkLock/redsync-rueidis/nodes=5/lockers=64", "/")
	for i, lv := range levels {
		re := regexp.MustCompile(lv)
		if !re.MatchString(full[i]) {
			t.Errorf("level %d pattern %q does not match %q", i, lv, full[i])
		}
	}
	if regexp.MustCompile(levels[1]).MatchString("rueidis") || regexp.MustCompile(levels[3]).MatchString("lockers=640") {
		t.Errorf("benchPattern(%q) = %q selects other benchmarks too", name, p)
	}
}

func TestNewResult(t *testing.T) {
	for _, tc := range []struct {
		name         string
		main         bool
		wantNil      bool
		kind         Kind
		caseName     string
		client, cont string
	}{
		{name: "Lock/rueidis/nodes=5/lockers=64", main: true, kind: KindDriver, caseName: "Lock", client: "rueidis", cont: "rueidis"},
		{name: "Lock/memory/nodes=5/lockers=64", main: true, kind: KindDriver, caseName: "Lock", client: "", cont: "memory"},
		{name: "Floor/redigo/nodes=1/lockers=1", main: true, kind: KindFloor, caseName: "Lock", client: "redigo", cont: "redigo"},
		{name: "Handoff/redsync-goredis/nodes=5/lockers=4", kind: KindPeer, caseName: "Handoff", client: "goredis", cont: "redsync-goredis"},
		{name: "Lock/redislock/nodes=1/lockers=1", kind: KindPeer, caseName: "Lock", client: "goredis", cont: "redislock"},
		{name: "Lock/rueidislock/nodes=1/lockers=1", kind: KindPeer, caseName: "Lock", client: "rueidis", cont: "rueidislock"},
		{name: "Observe/rueidis+redlockotel/nodes=5/lockers=64", main: true, kind: KindDriver, caseName: "Observe", client: "rueidis", cont: "rueidis+redlockotel"},
		{name: "Observe/memory+observer/nodes=5/lockers=1", main: true, kind: KindDriver, caseName: "Observe", client: "", cont: "memory+observer"},
		{name: "FloorDel/goredis/nodes=1/lockers=1", main: true, kind: KindDelFloor, caseName: "Lock", client: "goredis", cont: "goredis"},
		{name: "Scale/rueidis/nodes=5/locks=20000", main: true, kind: KindDriver, caseName: "Scale", client: "rueidis", cont: "rueidis"},
		{name: "Far/redsync-redigo/nodes=5/far=2/lockers=1", kind: KindPeer, caseName: "Far", client: "redigo", cont: "redsync-redigo"},
		{name: "Lone/valkeygo/nodes=1/lockers=1", main: true, kind: KindDriver, caseName: "Lone", client: "valkeygo", cont: "valkeygo"},
		{name: "HandoffFloor/redigo/nodes=5/clients=2/lockers=2", main: true, kind: KindDriver, caseName: "HandoffFloor", client: "redigo", cont: "redigo"},
		{name: "Run/Lock/nodes=1/lockers=1", main: true, wantNil: true},
		{name: "Lock/rueidis", main: true, wantNil: true},
	} {
		r := newResult(tc.name, "bin", tc.main)
		if tc.wantNil {
			if r != nil {
				t.Errorf("newResult(%q) = %+v, want nil: not one of the suite's", tc.name, r)
			}
			continue
		}
		if r == nil || r.Kind != tc.kind || r.Case != tc.caseName || r.Client != tc.client || r.Contender != tc.cont {
			t.Errorf("newResult(%q) = %+v, want kind %v case %s client %q contender %s", tc.name, r, tc.kind, tc.caseName, tc.client, tc.cont)
		}
	}
}

func TestMedians(t *testing.T) {
	m := medians([]map[string]float64{
		{OpsPerSec: 3, FailedPerOp: 0.1},
		{OpsPerSec: 1},
		{OpsPerSec: 2},
	})
	if m[OpsPerSec] != 2 || m[FailedPerOp] != 0 {
		t.Errorf("medians = %v, want ops/s 2 and failed/op 0 (missing counts as 0)", m)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", got)
	}
}

// syntheticReport is a report over the headline and stalled cases in which
// rueidis meets every target and goredis none.
func syntheticReport() *Report {
	res := func(caseName, params, contender string, kind Kind, client string, ops, p50, allocs float64) *Result {
		m := map[string]float64{OpsPerSec: ops, NsPerOp: 1e9 / ops, P50: p50, P99: 2 * p50, Max: 3 * p50, AllocsPerOp: allocs, BytesPerOp: 100 * allocs}
		return &Result{Case: caseName, Params: params, Contender: contender, Kind: kind, Client: client,
			Samples: []map[string]float64{m}, Median: m}
	}
	rs := []*Result{
		res("Lock", "nodes=5/lockers=64", "goredis", KindFloor, "goredis", 3000, 2e6, 100),
		res("Lock", "nodes=5/lockers=64", "goredis", KindDriver, "goredis", 2000, 3e6, 150),
		res("Lock", "nodes=5/lockers=64", "redsync-goredis", KindPeer, "goredis", 1900, 3e6, 149),
		res("Lock", "nodes=5/lockers=64", "rueidis", KindFloor, "rueidis", 7000, 1e6, 30),
		res("Lock", "nodes=5/lockers=64", "rueidis", KindDriver, "rueidis", 6500, 1e6, 37),
		res("Lock", "nodes=5/lockers=64", "redsync-rueidis", KindPeer, "rueidis", 5000, 1e6, 87),
		res("Lock", "nodes=5/lockers=64", "memory", KindDriver, "", 90000, 1e5, 30),
		res("Stalled", "nodes=5/lockers=64", "goredis", KindDriver, "goredis", 900, 9e6, 200),
		res("Stalled", "nodes=5/lockers=64", "rueidis", KindDriver, "rueidis", 6000, 1.5e6, 60),
		res("Lock", "nodes=1/lockers=64", "rueidislock", KindPeer, "rueidis", 20000, 1e6, 38),
	}
	sortResults(rs)
	return &Report{
		Config:  Config{Rounds: 3, Benchtime: "1s", HandoffBenchtime: "100x"},
		Env:     Env{Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), CPU: "Example CPU", CPUs: 2, GOMAXPROCS: 2, Redis: "7.0.15"},
		Results: rs,
	}
}

func TestTargets(t *testing.T) {
	ts := syntheticReport().Targets()
	want := map[string]bool{
		"every driver ≥ 0.85× its client's floor":                     false, // goredis 0.67×
		"every driver ≥ redsync over the same client":                 false, // goredis 1.05× < 1.5×
		"≤ 40 allocations per lock+unlock":                            true,  // rueidis 37
		"with 2 of 5 nodes stalled, p50 lock+unlock within 2× the he": false, // goredis 3×
	}
	if len(ts) != len(want) {
		t.Fatalf("Targets() = %d targets, want %d (the 1-locker stalled target has no figures): %+v", len(ts), len(want), ts)
	}
	for _, tg := range ts {
		found := false
		for prefix, met := range want {
			if strings.HasPrefix(tg.Name, prefix) {
				found = true
				if tg.Met != met {
					t.Errorf("target %q met = %v, want %v (figures %s)", tg.Name, tg.Met, met, tg.Figures)
				}
			}
		}
		if !found {
			t.Errorf("unexpected target %q", tg.Name)
		}
	}
}

// TestFloorTargetCountsDelFloor: the floor is SET NX PX then DEL,
// which the DEL floor does; a driver at 0.85× or more of the floor that
// releases by script but below 0.85× of the DEL floor misses the target.
func TestFloorTargetCountsDelFloor(t *testing.T) {
	res := func(contender string, kind Kind, ops float64) *Result {
		m := map[string]float64{OpsPerSec: ops, NsPerOp: 1e9 / ops, P50: 1e6, AllocsPerOp: 30}
		return &Result{Case: "Lock", Params: "nodes=5/lockers=64", Contender: contender, Kind: kind, Client: "rueidis",
			Samples: []map[string]float64{m}, Median: m}
	}
	for _, tc := range []struct {
		del  float64
		met  bool
		figs string
	}{
		{9000, true, "rueidis 0.90× (0.89× the DEL floor)"},
		{10000, false, "rueidis 0.90× (0.80× the DEL floor)"},
		{0, true, "rueidis 0.90×"}, // no DEL floor in the run
	} {
		rs := []*Result{res("rueidis", KindFloor, 8889), res("rueidis", KindDriver, 8000)}
		if tc.del > 0 {
			rs = append(rs, res("rueidis", KindDelFloor, tc.del))
		}
		rep := &Report{Results: rs}
		var got *Target
		for _, tg := range rep.Targets() {
			if strings.HasPrefix(tg.Name, "every driver ≥ 0.85× its client's floor") {
				got = &tg
			}
		}
		if got == nil || got.Met != tc.met || got.Figures != tc.figs {
			t.Errorf("DEL floor %v ops/s: target %+v; want met %v, figures %q", tc.del, got, tc.met, tc.figs)
		}
	}
}

func TestMarkdown(t *testing.T) {
	md := syntheticReport().Markdown()
	for _, want := range []string{
		"| CPU | Example CPU, 2 logical CPUs, GOMAXPROCS 2",
		"## Headline: Lock+unlock, uncontended: 5 nodes, 64 lockers",
		"| contender | ops/s | ns/op | × floor |",
		"| floor: rueidis | 7,000 | 142,857 | 1.00× | 1.00 ms |",
		"| **rueidis** | 6,500 | 153,846 | 0.93× |",
		"| redsync-rueidis | 5,000 | 200,000 | 0.71× |",
		"| **memory** | 90,000 | 11,111 | – |",
		"Lock+unlock with 2 of 5 nodes stalled: 64 lockers",
		"![Throughput and p99 latency",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown() lacks %q:\n%s", want, md)
		}
	}
	// The floor comes before its driver, the driver before its peers.
	if i, j := strings.Index(md, "| floor: rueidis"), strings.Index(md, "| **rueidis**"); i < 0 || j < i {
		t.Errorf("the floor is not listed before its driver")
	}
}

// scaleReport is a report over the cases of ScaleTargets in which rueidis meets
// every target and goredis none.
func scaleReport() *Report {
	res := func(caseName, params, contender string, kind Kind, m map[string]float64) *Result {
		return &Result{Case: caseName, Params: params, Contender: contender, Kind: kind, Client: contender,
			Samples: []map[string]float64{m}, Median: m}
	}
	p50 := func(v float64) map[string]float64 { return map[string]float64{OpsPerSec: 1e9 / v, P50: v} }
	rs := []*Result{
		res("Lock", "nodes=1/lockers=1", "goredis", KindFloor, p50(100e3)),
		res("Lock", "nodes=1/lockers=1", "goredis", KindDelFloor, p50(95e3)),
		res("Lock", "nodes=1/lockers=1", "goredis", KindDriver, p50(130e3)),
		res("Lock", "nodes=1/lockers=1", "rueidis", KindFloor, p50(100e3)),
		res("Lock", "nodes=1/lockers=1", "rueidis", KindDriver, p50(102e3)),
		res("Lone", "nodes=1/lockers=1", "goredis", KindDriver, map[string]float64{P50: 110e3, FloorP50: 99e3, XFloor: 0.90}),
		res("Lone", "nodes=1/lockers=1", "rueidis", KindDriver, map[string]float64{P50: 101e3, FloorP50: 102e3, XFloor: 1.01}),
		res("Lock", "nodes=5/lockers=1", "goredis", KindDriver, p50(500e3)),
		res("Lock", "nodes=5/lockers=1", "rueidis", KindDriver, p50(500e3)),
		res("Far", "nodes=5/far=2/lockers=1", "goredis", KindDriver, p50(600e3)),
		res("Far", "nodes=5/far=2/lockers=1", "rueidis", KindDriver, p50(520e3)),
		res("Far", "nodes=5/proxied=2/lockers=1", "rueidis", KindDriver, p50(500e3)),
		res("Handoff", "nodes=5/clients=2/lockers=2", "goredis", KindDriver, map[string]float64{P50: 2e6, WaitP50: 12e6, WaitMax: 15e6}),
		res("Handoff", "nodes=5/clients=2/lockers=2", "rueidis", KindDriver, map[string]float64{P50: 400e3, WaitP50: 11e6, WaitMax: 12e6}),
		res("HandoffFloor", "nodes=5/clients=2/lockers=2", "rueidis", KindDriver, map[string]float64{P50: 420e3, FloorP50: 462e3, XFloor: 1.1, WaitP50: 11e6, WaitMax: 12e6}),
		res("Scale", "nodes=5/locks=20000", "goredis", KindDriver, map[string]float64{Held: 19000, Lost: 5000, Errors: 19700, BytesPerLock: 36e3, AcquireNs: 28e9}),
		res("Scale", "nodes=5/locks=20000", "rueidis", KindDriver, map[string]float64{Held: 20000, BytesPerLock: 1500, CPUPerLockSec: 2000, AcquireNs: 3e9}),
	}
	sortResults(rs)
	return &Report{Config: Config{Rounds: 1}, Results: rs}
}

func TestScaleTargets(t *testing.T) {
	ts := scaleReport().ScaleTargets()
	if len(ts) != 5 {
		t.Fatalf("ScaleTargets() = %d targets, want 5 (the 3-node lone call and 8×4 hand-off have no figures): %+v", len(ts), ts)
	}
	for _, tg := range ts {
		if tg.Met {
			t.Errorf("target %q met, want not met: goredis misses it (figures %s)", tg.Name, tg.Figures)
		}
		if !strings.Contains(tg.Figures, "goredis") || !strings.Contains(tg.Figures, "rueidis") {
			t.Errorf("target %q: figures %q do not name both drivers", tg.Name, tg.Figures)
		}
		// The lone call is judged on the Lone case (in turn), not on the
		// separate Lock and floor runs, where it has figures.
		if strings.HasPrefix(tg.Name, "2 of 5 nodes") && !strings.Contains(tg.Figures, "rueidis 520 µs vs 500 µs (1.04×; 1.04× the same nodes through the proxy without delay, 500 µs)") {
			t.Errorf("far target: figures %q, want rueidis's against all-near and against the proxy without delay", tg.Figures)
		}
		// The one-waiter hand-off shows the figures in turn with the
		// client's waiting floor, where the HandoffFloor case has them.
		if strings.HasPrefix(tg.Name, "hand-off p50 ≤ 600 µs") && !strings.Contains(tg.Figures, "rueidis 400 µs (longest wait 1.1× the median) [in turn with its client's waiting floor: 420 µs vs 462 µs, 1.10×]") {
			t.Errorf("hand-off target: figures %q, want rueidis's with its floor in turn", tg.Figures)
		}
		if strings.HasPrefix(tg.Name, "lone call, 1 node") && !strings.Contains(tg.Figures, "goredis 0.90× (110 µs vs 99.0 µs, in turn)") {
			t.Errorf("lone call target: figures %q, want goredis's from the Lone case", tg.Figures)
		}
	}
	r := scaleReport()
	r.Results = slices.DeleteFunc(r.Results, func(res *Result) bool { return res.Contender == "goredis" })
	for _, tg := range r.ScaleTargets() {
		if !tg.Met {
			t.Errorf("target %q not met by rueidis alone, want met (figures %s)", tg.Name, tg.Figures)
		}
	}
}

func TestScaleMarkdown(t *testing.T) {
	md := scaleReport().Markdown()
	for _, want := range []string{
		"## Targets at scale",
		"| floor (DEL): goredis |",
		"Locks held at once through Do by one client: 20000 on 5 nodes",
		"| **rueidis** | 20,000 | 0 | 0 | 1,500 | 2.00 µs | 3.00 s |",
		"Hand-off of one key: 5 nodes, 2 clients, 2 lockers in all",
		"| 12.0 ms | 15.0 ms | 1.2× |",
		"Lock+unlock with 2 of 5 nodes 40ms away",
		"Lone call, each driver and its client's floor in turn",
		"Lock+unlock with 2 of 5 nodes through the Far case's proxy, without delay: 1 locker",
		"| 0.90× (p50; floor 99.0 µs) | 110 µs |",
		"Hand-off to one waiter, each driver and its client's waiting floor in turn, ten hand-offs at a time: 5 nodes, each held 10ms",
		"| 1.10× (p50; floor 462 µs) | 420 µs |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown() lacks %q:\n%s", want, md)
		}
	}
}

func TestSVG(t *testing.T) {
	svg := syntheticReport().SVG()
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG() is not well-formed XML: %v\n%s", err, svg)
		}
	}
	s := string(svg)
	for _, want := range []string{"floor: rueidis", "redsync-goredis", "rueidislock", "7,000", "2.00 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG() lacks %q", want)
		}
	}
	if strings.Contains(s, ">memory<") {
		t.Errorf("SVG() shows the memory driver, whose bars would flatten the others")
	}
	if i, j := strings.Index(s, "5 nodes, 64 lockers"), strings.Index(s, "1 node, 64 lockers"); i < 0 || j < i {
		t.Errorf("the headline case is not drawn first")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{formatCount(1234567.4), "1,234,567"},
		{formatCount(999), "999"},
		{formatCount(12.34), "12.3"},
		{formatNs(512), "512 ns"},
		{formatNs(81234), "81.2 µs"},
		{formatNs(8482677), "8.48 ms"},
		{formatNs(123456789), "123 ms"},
		{formatNs(2.5e9), "2.50 s"},
		{formatNs(0), "–"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestFindModule(t *testing.T) {
	wd, _ := os.Getwd()
	dir, err := FindModule(filepath.Join(wd, "..", "peers"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Clean(filepath.Join(wd, "..", "..")); dir != want {
		t.Errorf("FindModule(bench/peers) = %s, want the module root %s", dir, want)
	}
	if _, err := FindModule(os.TempDir()); err == nil {
		t.Errorf("FindModule(%s) found a module", os.TempDir())
	}
}

// TestRun runs one benchmark of the drivers twice through the whole
// pipeline: servers, build, listing, rounds, report files.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a test binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var progress strings.Builder
	rep, err := Run(ctx, Config{
		Bench:     "^BenchmarkLock$/^rueidis$/^nodes=1$/^lockers=1$",
		Benchtime: "3x",
		Rounds:    2,
		NoPeers:   true,
		Progress:  &progress,
	})
	if errors.Is(err, redistest.ErrNotInstalled) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("Run gave %d results, want 1", len(rep.Results))
	}
	r := rep.Results[0]
	if r.Contender != "rueidis" || r.Kind != KindDriver || len(r.Samples) != 2 || r.Median[OpsPerSec] <= 0 {
		t.Errorf("result = %+v, want the rueidis driver with 2 samples and a throughput", r)
	}
	if !regexp.MustCompile(`(?m)^\[\s*2/2\] round 2/2`).MatchString(progress.String()) {
		t.Errorf("progress does not count the runs:\n%s", progress.String())
	}
	dir := t.TempDir()
	if err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ResultsFile, ChartFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// A section after KeptMarker survives a new report.
	kept := KeptMarker + "\n\n## Measured by hand\n"
	path := filepath.Join(dir, ResultsFile)
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(old, kept...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !strings.HasSuffix(string(now), kept) || strings.Count(string(now), "# Benchmark results") != 1 {
		t.Errorf("the kept section is not at the end once, after one report:\n%s", now)
	}
}

// TestModulesNameEveryClient checks that a report gives the version of every
// client and peer the benchmarks are built with (the issue: "RESULTS.md with
// the date, CPU, Go, Redis and client versions"): every module the bench
// module requires directly, but this repository's own and OpenTelemetry's
// (the no-op providers of the Observe case).
func TestModulesNameEveryClient(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	benchDir := filepath.Join(wd, "..")
	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{if not .Indirect}}{{.Path}}{{end}}", "all")
	cmd.Dir = benchDir
	cmd.Env = append(os.Environ(), "GOWORK=off") // the bench module's own requirements, not the workspace's
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	var direct []string
	for line := range strings.Lines(string(out)) {
		path := strings.TrimSpace(line)
		if path == "" || strings.HasPrefix(path, "github.com/go-redlock/") || strings.HasPrefix(path, "go.opentelemetry.io/") {
			continue
		}
		direct = append(direct, path)
	}
	if len(direct) == 0 {
		t.Fatalf("go list -m all in %s listed no direct requirement:\n%s", benchDir, out)
	}
	e := newEnv(benchDir)
	e.addModules(t.Context(), benchDir)
	md := (&Report{Env: e}).Markdown()
	for _, path := range direct {
		if e.Modules[path] == "" || !strings.Contains(md, path+" ") {
			t.Errorf("the report does not give the version of %s, which the benchmarks are built with", path)
		}
	}
}

// TestMarkdownNamesItsCommand: a report says which command produced it, and
// "Regenerate with the same command": a run with flags names them, so that
// RESULTS.md written by a short run does not claim the default command.
func TestMarkdownNamesItsCommand(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Produced by `cd bench && go run ./cmd/benchrun` on "},
		{Config{Bench: DefaultBench, Benchtime: "1s", HandoffBenchtime: "100x", Rounds: 3, ScaleLocks: bench.DefaultScaleLocks, ScaleFor: bench.DefaultScaleFor},
			"Produced by `cd bench && go run ./cmd/benchrun` on "},
		{Config{Bench: "Lock/.*/nodes=5", Benchtime: "100x", HandoffBenchtime: "10x", Rounds: 1, ScaleLocks: 500, ScaleFor: 2 * time.Second, NoPeers: true},
			"Produced by `cd bench && go run ./cmd/benchrun -bench 'Lock/.*/nodes=5' -benchtime 100x -handoff-benchtime 10x -rounds 1 -scale-locks 500 -scale-for 2s -no-peers` on "},
		{Config{Bench: "it's", Rounds: 5}, "`cd bench && go run ./cmd/benchrun -bench 'it'\\''s' -rounds 5` on "},
	} {
		rep := syntheticReport()
		rep.Config = tc.cfg
		if md := rep.Markdown(); !strings.Contains(md, tc.want) {
			t.Errorf("Config %+v: the report lacks %q:\n%s", tc.cfg, tc.want, md[:min(len(md), 400)])
		}
	}
	rep := syntheticReport()
	rep.Config.Rounds = 1
	if md := rep.Markdown(); !strings.Contains(md, ": one round, each benchmark") {
		t.Errorf("one round is not said so:\n%s", md[:min(len(md), 400)])
	}
	if svg := string(rep.SVG()); !strings.Contains(svg, "· one round</text>") || strings.Contains(svg, "rounds") {
		t.Errorf("the chart does not say one round:\n%s", svg[:min(len(svg), 600)])
	}
}

// TestScaleTargetHeldTooShort: the Scale target asks for no lock lost "over
// three extension periods" (an extension every TTL/3), and the report's notes
// say the locks were held "11s: three extension periods". A run given a
// shorter -scale-for (1s: no extension at all) claimed the target met and
// the 11s all the same. Now the notes give the hold the run used and the
// periods it spans, and a hold of fewer than three periods does not meet the
// target, whose row says why.
func TestScaleTargetHeldTooShort(t *testing.T) {
	scaleTarget := func(r *Report) *Target {
		for _, tg := range r.ScaleTargets() {
			if strings.HasPrefix(tg.Name, "Scale: every lock acquired") {
				return &tg
			}
		}
		return nil
	}
	r := scaleReport()
	r.Results = slices.DeleteFunc(r.Results, func(res *Result) bool { return res.Contender == "goredis" })
	for _, tc := range []struct {
		hold  time.Duration
		met   bool
		notes string
	}{
		{0, true, "(11s: three extension periods)"}, // the default
		{bench.DefaultScaleFor, true, "(11s: three extension periods)"},
		{20 * time.Second, true, "(20s: six extension periods)"},
		{time.Second, false, "(1s: no extension period)"},
		{5 * time.Second, false, "(5s: one extension period)"},
	} {
		r.Config.ScaleFor = tc.hold
		tg := scaleTarget(r)
		if tg == nil {
			t.Fatalf("hold %v: no Scale target", tc.hold)
		}
		if tg.Met != tc.met {
			t.Errorf("hold %v: target %q met %v, want %v", tc.hold, tg.Name, tg.Met, tc.met)
		}
		if !tc.met && !strings.Contains(tg.Name, tc.hold.String()) {
			t.Errorf("hold %v: target %q does not say how long the locks were held", tc.hold, tg.Name)
		}
		md := r.Markdown()
		if !strings.Contains(md, "then for the hold time "+tc.notes) {
			t.Errorf("hold %v: the notes lack %q", tc.hold, tc.notes)
		}
	}
}

// A run with -no-peers says in its report that the peers were left out, and
// which target that leaves unchecked: the report showed no peer and left
// the target out of its table without a word (an outside check).
func TestMarkdownNoPeers(t *testing.T) {
	rep := syntheticReport()
	rep.Results = slices.DeleteFunc(rep.Results, func(r *Result) bool { return r.Kind == KindPeer })
	rep.Config.NoPeers = true
	md := rep.Markdown()
	for _, want := range []string{"**Peers left out** (`-no-peers`)", `the target "` + peerTarget + `" has no figures and is not checked`} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown() of a -no-peers run lacks %q:\n%s", want, md[:min(len(md), 2000)])
		}
	}
	for _, tg := range rep.Targets() {
		if tg.Name == peerTarget {
			t.Errorf("a -no-peers run checks %q: %+v", peerTarget, tg)
		}
	}
	rep.Config.NoPeers = false
	if md := rep.Markdown(); strings.Contains(md, "Peers left out") {
		t.Errorf("a run with the peers says they were left out")
	}
}
