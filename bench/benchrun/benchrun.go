// Package benchrun runs the benchmark suite of package bench for every driver,
// its client's floor and the peers of package bench/peers, and reports them side
// by side: a markdown table (RESULTS.md) and a bar chart (results.svg).
//
// It starts five redis-server processes on loopback ports and shares them with
// every run through bench.AddrsEnv; builds the test binaries of bench and
// bench/peers once; runs every benchmark once briefly to list them and to warm
// up; then runs each benchmark alone, in its own process, Rounds times,
// alternating the contenders of a case (A B C, then C B A, ...) so that drift of
// the machine during the run falls on all of them alike; and reports the median
// of the rounds. The command bench/cmd/benchrun is a thin wrapper:
//
//	cd bench && go run ./cmd/benchrun
//
// Run needs the source tree of the module and the go command.
package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/redistest"
)

// DefaultBench selects the benchmarks of the suite: its cases and the floors.
const DefaultBench = "^Benchmark(Lock|Floor|FloorDel|Lone|Extend|Handoff|HandoffFloor|Stalled|Far|Scale|Observe)$"

// The defaults of Config's Benchtime, HandoffBenchtime and Rounds, which
// the command's flags show and Config.Command leaves out.
const (
	DefaultBenchtime        = "1s"
	DefaultHandoffBenchtime = "100x" // 100 hand-offs
	DefaultRounds           = 3
)

// Config says what to run. The zero value of each field means its default.
type Config struct {
	// Dir is the root of the module github.com/go-redlock/redlock, or a
	// directory inside it; by default the module that holds the working
	// directory. Run fails, before it starts anything, when Dir is not in
	// that module.
	Dir string
	// Bench is the -test.bench pattern that selects benchmarks in both test
	// binaries (default DefaultBench). Benchmarks outside the suite's cases are
	// ignored.
	Bench string
	// Benchtime is the -test.benchtime of each run (default
	// DefaultBenchtime).
	Benchtime string
	// HandoffBenchtime is the -test.benchtime of the Handoff and HandoffFloor
	// cases, in which an operation takes tens of milliseconds (default
	// DefaultHandoffBenchtime).
	HandoffBenchtime string
	// ScaleLocks is how many locks the Scale case holds at once (default
	// bench.DefaultScaleLocks), and ScaleFor for how long (default
	// bench.DefaultScaleFor). Each run of the Scale case is one operation.
	ScaleLocks int
	ScaleFor   time.Duration
	// Rounds is how many times each benchmark runs (default DefaultRounds).
	Rounds int
	// NoPeers leaves out the package bench/peers.
	NoPeers bool
	// Progress receives a line per run (default: discarded).
	Progress io.Writer `json:"-"`
}

// A Kind says what a contender is.
type Kind int

// The kinds of contenders.
const (
	KindDriver   Kind = iota // a redlock driver
	KindFloor                // a bare client, no lock logic: the driver's commands by hand
	KindPeer                 // another lock library
	KindDelFloor             // a bare client that releases by DEL, not by the release script
)

// Result is one benchmark: one case with its parameters, for one contender.
type Result struct {
	// Case is the case: "Lock", "Extend", "Handoff", "Stalled" or "Observe".
	// The floors are under "Lock", with Kind KindFloor.
	Case string
	// Params are the sub-benchmark's parameters: "nodes=5/lockers=64".
	Params string
	// Contender is the contender's name: "rueidis", "redsync-rueidis".
	Contender string
	// Kind is what the contender is.
	Kind Kind
	// Client is the Redis client the contender runs over, "" if none.
	Client string
	// Samples are the metrics of each round.
	Samples []map[string]float64
	// Median is the median of each metric over the samples.
	Median map[string]float64

	bin  string // test binary
	name string // benchmark name: "Floor/rueidis/nodes=5/lockers=64"
}

// Label is how reports name the contender: a floor is "floor: rueidis", a
// floor that releases by DEL "floor (DEL): rueidis".
func (r *Result) Label() string {
	switch r.Kind {
	case KindFloor:
		return "floor: " + r.Contender
	case KindDelFloor:
		return "floor (DEL): " + r.Contender
	}
	return r.Contender
}

// Report is the outcome of a run.
type Report struct {
	// Config is the configuration, with defaults filled in.
	Config Config
	// Env says where and with what the run took place.
	Env Env
	// Results are the benchmarks, ordered by case, parameters and contender.
	Results []*Result
	// Elapsed is how long the run took.
	Elapsed time.Duration
	// Incomplete, when not empty, says that the run was stopped before
	// its end, when and why: Results are then the benchmarks that ran at
	// least once, each with the rounds it ran.
	Incomplete string `json:",omitempty"`
}

// Run runs the benchmarks as cfg says and returns the report; it writes no
// file. ctx bounds the whole run: when it ends once some runs were made
// (Ctrl-C, SIGTERM), Run returns the report of those, with Incomplete
// saying so, and an error that includes ctx's cause; when it ends before
// (while the servers start or the benchmarks build), the error includes
// the cause too.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	rep, err := runSuite(ctx, cfg)
	if err != nil && ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
		// Say why, not only what the cancelled context did to a child
		// process ("go test -c ...: signal: killed").
		err = fmt.Errorf("benchrun: stopped (%v) before any run was made: %w", context.Cause(ctx), err)
	}
	return rep, err
}

// runSuite is Run but for the cause of a stop before the first run.
func runSuite(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	progress := func(format string, args ...any) { fmt.Fprintf(cfg.Progress, format+"\n", args...) }
	rep := &Report{Config: cfg, Env: newEnv(cfg.Dir)}

	progress("starting 5 redis-server processes on 127.0.0.1")
	servers, err := startServers(ctx, 5)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	rep.Env.Redis = redisVersion(ctx, servers[0])
	addrs := redistest.Addrs(servers)

	tmp, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	type binary struct{ path, pkgDir string }
	bins := []binary{{filepath.Join(tmp, "bench.test"), filepath.Join(cfg.Dir, "bench")}}
	if !cfg.NoPeers {
		bins = append(bins, binary{filepath.Join(tmp, "peers.test"), filepath.Join(cfg.Dir, "bench", "peers")})
	}
	for _, b := range bins {
		rel, _ := filepath.Rel(cfg.Dir, b.pkgDir)
		progress("building the benchmarks of ./%s", rel)
		if err := build(ctx, b.pkgDir, b.path); err != nil {
			return nil, err
		}
		rep.Env.addBinary(b.path)
		rep.Env.addModules(ctx, b.pkgDir)
	}

	r := runner{addrs: addrs, cfg: cfg}
	for _, b := range bins {
		progress("listing and warming up %s (every benchmark once)", filepath.Base(b.path))
		out, err := r.run(ctx, b.path, cfg.Bench, "1x")
		if err != nil {
			return nil, err
		}
		lines, cpu := ParseLines(out)
		if cpu != "" {
			rep.Env.CPU = cpu
		}
		for _, l := range lines {
			if res := newResult(l.Name, b.path, b.path == bins[0].path); res != nil {
				rep.Results = append(rep.Results, res)
			}
		}
	}
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("benchrun: no benchmark of the suite matches %q", cfg.Bench)
	}
	sortResults(rep.Results)

	// The rounds: every case in turn, its contenders forward in odd rounds and
	// backward in even ones.
	cases := groupByCase(rep.Results)
	var schedule []*Result // every run, in order
	for round := 1; round <= cfg.Rounds; round++ {
		for _, c := range cases {
			order := slices.Clone(c)
			if round%2 == 0 {
				slices.Reverse(order)
			}
			schedule = append(schedule, order...)
		}
	}
	perRound := len(rep.Results)
	var clk clock
	for i, res := range schedule {
		benchtime := cfg.Benchtime
		switch res.Case {
		case "Handoff", "HandoffFloor":
			benchtime = cfg.HandoffBenchtime
		case "Scale":
			benchtime = "1x"
		}
		runStart := time.Now()
		out, err := r.run(ctx, res.bin, benchPattern(res.name), benchtime)
		if err != nil {
			if ctx.Err() != nil {
				return rep.stopped(ctx, i, len(schedule), start)
			}
			return nil, err
		}
		clk.took(res, time.Since(runStart))
		lines, _ := ParseLines(out)
		j := slices.IndexFunc(lines, func(l Line) bool { return l.Name == res.name })
		if j < 0 {
			return nil, fmt.Errorf("benchrun: %s gave no result:\n%s", res.name, tail(out))
		}
		res.Samples = append(res.Samples, lines[j].Metrics)
		progress("[%3d/%d] round %d/%d  %-8s %-20s %-20s %s  (%s)", i+1, len(schedule), i/perRound+1, cfg.Rounds,
			res.Case, res.Params, res.Label(), summary(lines[j].Metrics), clk.leftText(schedule[i+1:]))
	}
	rep.finish(start)
	return rep, nil
}

// finish computes the medians and the run's end figures; start is when
// the run started.
func (rep *Report) finish(start time.Time) {
	for _, res := range rep.Results {
		res.Median = medians(res.Samples)
	}
	rep.Elapsed = time.Since(start)
	rep.Env.LoadEnd = loadAvg()
}

// stopped ends a run that ctx stopped after made of its total runs: the
// report of the benchmarks measured, marked incomplete, with the error; no
// report when none was.
func (rep *Report) stopped(ctx context.Context, made, total int, start time.Time) (*Report, error) {
	cause := context.Cause(ctx)
	err := fmt.Errorf("benchrun: stopped after %d of %d runs: %w", made, total, cause)
	rep.Results = slices.DeleteFunc(rep.Results, func(res *Result) bool { return len(res.Samples) == 0 })
	if len(rep.Results) == 0 {
		return nil, err
	}
	rep.finish(start)
	rep.Incomplete = fmt.Sprintf("stopped (%v) after %d of %d runs", cause, made, total)
	return rep, err
}

// Command returns the command that runs what cfg says: cd bench && go run
// ./cmd/benchrun with a flag for each field that is neither zero nor its
// default, so that a report names the command that regenerates it.
func (cfg Config) Command() string {
	var args []string
	flag := func(name, value, zero, def string) {
		if value != zero && value != def {
			args = append(args, "-"+name, shellQuote(value))
		}
	}
	flag("bench", cfg.Bench, "", DefaultBench)
	flag("benchtime", cfg.Benchtime, "", DefaultBenchtime)
	flag("handoff-benchtime", cfg.HandoffBenchtime, "", DefaultHandoffBenchtime)
	flag("rounds", strconv.Itoa(cfg.Rounds), "0", strconv.Itoa(DefaultRounds))
	flag("scale-locks", strconv.Itoa(cfg.ScaleLocks), "0", strconv.Itoa(bench.DefaultScaleLocks))
	flag("scale-for", cfg.ScaleFor.String(), "0s", bench.DefaultScaleFor.String())
	if cfg.NoPeers {
		args = append(args, "-no-peers")
	}
	return strings.Join(append([]string{"cd bench && go run ./cmd/benchrun"}, args...), " ")
}

// shellQuote returns s as one word of a POSIX shell: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// withDefaults fills in the defaults and finds the module.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Bench == "" {
		cfg.Bench = DefaultBench
	}
	if cfg.Benchtime == "" {
		cfg.Benchtime = DefaultBenchtime
	}
	if cfg.HandoffBenchtime == "" {
		cfg.HandoffBenchtime = DefaultHandoffBenchtime
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = DefaultRounds
	}
	if cfg.ScaleLocks <= 0 {
		cfg.ScaleLocks = bench.DefaultScaleLocks
	}
	if cfg.ScaleFor <= 0 {
		cfg.ScaleFor = bench.DefaultScaleFor
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	// A Dir given is checked, and taken up to the module's root, before any
	// server starts.
	start := cfg.Dir
	if start == "" {
		wd, err := os.Getwd()
		if err != nil {
			return cfg, fmt.Errorf("benchrun: %w", err)
		}
		start = wd
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return cfg, fmt.Errorf("benchrun: %w", err)
	}
	dir, err := FindModule(abs)
	if err != nil {
		return cfg, err
	}
	cfg.Dir = dir
	return cfg, nil
}

// modulePath is the module whose benchmarks Run runs.
const modulePath = "github.com/go-redlock/redlock"

// FindModule returns the root of the module github.com/go-redlock/redlock that
// holds dir, looking upwards from dir, so that it is found from bench/peers
// too.
func FindModule(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(data)) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && f[1] == modulePath {
					return d, nil
				}
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("benchrun: %s is not inside the module %s", dir, modulePath)
		}
	}
}

// startServers starts n servers in parallel.
func startServers(ctx context.Context, n int) ([]*redistest.Server, error) {
	servers, err := redistest.StartN(ctx, n)
	if errors.Is(err, redistest.ErrNotInstalled) {
		// err holds the install hint, and what was looked for where
		// (REDISTEST_SERVER's value, or PATH).
		return nil, fmt.Errorf("benchrun: %w", err)
	}
	return servers, err
}

// build compiles the test binary of the package in dir to out.
func build(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, ".")
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("benchrun: go test -c in %s: %w\n%s", dir, err, msg)
	}
	return nil
}

// runner runs test binaries against the shared servers.
type runner struct {
	addrs []string
	cfg   Config
}

// runTimeout bounds one run of a test binary.
const runTimeout = 20 * time.Minute

// run runs the benchmarks of bin that pattern selects, for benchtime each.
func (r runner) run(ctx context.Context, bin, pattern, benchtime string) (string, error) {
	cmd := exec.CommandContext(ctx, bin,
		"-test.run=^$", "-test.bench="+pattern, "-test.benchtime="+benchtime,
		"-test.benchmem", "-test.count=1", "-test.timeout="+runTimeout.String())
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), bench.AddrsEnv+"="+strings.Join(r.addrs, ","),
		bench.ScaleLocksEnv+"="+strconv.Itoa(r.cfg.ScaleLocks), bench.ScaleForEnv+"="+r.cfg.ScaleFor.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("benchrun: %s -test.bench %s: %w\n%s", filepath.Base(bin), pattern, err, tail(out.String()))
	}
	return out.String(), nil
}

// tail returns the last lines of out.
func tail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// cases are the suite's cases in report order; the floors' benchmark is
// "Floor", reported under "Lock".
var cases = []string{"Lock", "Lone", "Extend", "Handoff", "HandoffFloor", "Stalled", "Far", "Scale", "Observe"}

// clients are the Redis clients, in report order.
var clients = []string{"goredis", "redigo", "rueidis", "valkeygo"}

// peerClients names the client of the peers whose names do not end in one.
var peerClients = map[string]string{"redislock": "goredis", "rueidislock": "rueidis"}

// newResult makes the Result for the benchmark named name in bin, or returns
// nil if it is not one of the suite's. main says that bin is the main
// module's (drivers and floors), not the peers'.
func newResult(name, bin string, main bool) *Result {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) != 3 {
		return nil
	}
	res := &Result{Case: parts[0], Contender: parts[1], Params: parts[2], bin: bin, name: name}
	switch {
	case parts[0] == "Floor" && main:
		res.Case, res.Kind, res.Client = "Lock", KindFloor, res.Contender
	case parts[0] == "FloorDel" && main:
		res.Case, res.Kind, res.Client = "Lock", KindDelFloor, res.Contender
	case !slices.Contains(cases, parts[0]):
		return nil
	case main:
		res.Kind = KindDriver
		// The Observe case's "rueidis+observer" is the rueidis driver
		// with an observer.
		if c, _, _ := strings.Cut(res.Contender, "+"); slices.Contains(clients, c) {
			res.Client = c
		}
	default:
		res.Kind = KindPeer
		res.Client = peerClients[res.Contender]
		if i := strings.LastIndex(res.Contender, "-"); i >= 0 && slices.Contains(clients, res.Contender[i+1:]) {
			res.Client = res.Contender[i+1:]
		}
	}
	return res
}

// sortResults orders results by case, parameters (numerically), client, and
// kind: the floor, the driver, then the peers.
func sortResults(rs []*Result) {
	rank := func(list []string, s string) int {
		if i := slices.Index(list, s); i >= 0 {
			return i
		}
		return len(list)
	}
	slices.SortStableFunc(rs, func(a, b *Result) int {
		if c := rank(cases, a.Case) - rank(cases, b.Case); c != 0 {
			return c
		}
		if c := compareParams(a.Params, b.Params); c != 0 {
			return c
		}
		if c := rank(clients, a.Client) - rank(clients, b.Client); c != 0 {
			return c
		}
		if c := kindRank[a.Kind] - kindRank[b.Kind]; c != 0 {
			return c
		}
		return strings.Compare(a.Contender, b.Contender)
	})
}

// kindRank orders the contenders of one client: its floors, its driver, then
// the peers over it.
var kindRank = map[Kind]int{KindDelFloor: 0, KindFloor: 1, KindDriver: 2, KindPeer: 3}

// compareParams compares "nodes=5/lockers=64" parameter by parameter, values
// as numbers.
func compareParams(a, b string) int {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	for i := range min(len(pa), len(pb)) {
		ka, va, _ := strings.Cut(pa[i], "=")
		kb, vb, _ := strings.Cut(pb[i], "=")
		if ka != kb {
			return strings.Compare(ka, kb)
		}
		na, ea := strconv.Atoi(va)
		nb, eb := strconv.Atoi(vb)
		if ea == nil && eb == nil && na != nb {
			return na - nb
		}
		if c := strings.Compare(va, vb); ea != nil && c != 0 {
			return c
		}
	}
	return len(pa) - len(pb)
}

// groupByCase splits sorted results into runs of the same case and parameters.
func groupByCase(rs []*Result) [][]*Result {
	var groups [][]*Result
	for i, r := range rs {
		if i == 0 || r.Case != rs[i-1].Case || r.Params != rs[i-1].Params {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r)
	}
	return groups
}

// medians returns the median of each metric over samples; a metric missing
// from a sample counts as 0 (failed/op is reported only when not 0).
func medians(samples []map[string]float64) map[string]float64 {
	units := make(map[string]bool)
	for _, s := range samples {
		for u := range s {
			units[u] = true
		}
	}
	m := make(map[string]float64, len(units))
	for u := range units {
		vs := make([]float64, len(samples))
		for i, s := range samples {
			vs[i] = s[u]
		}
		m[u] = median(vs)
	}
	return m
}

// median returns the median of vs, which is not empty.
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// summary is the progress line's view of one result.
func summary(m map[string]float64) string {
	s := fmt.Sprintf("%10s ops/s  p50 %9s  p99 %9s  %4.0f allocs/op",
		formatCount(m[OpsPerSec]), formatNs(m[P50]), formatNs(m[P99]), m[AllocsPerOp])
	if f := m[FailedPerOp]; f > 0 {
		s += fmt.Sprintf("  %.2g failed/op", f)
	}
	return s
}
