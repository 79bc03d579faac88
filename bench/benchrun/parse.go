package benchrun

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
)

// The metrics of a result, by the units the benchmarks report.
const (
	NsPerOp     = "ns/op"
	OpsPerSec   = "ops/s"
	P50         = "p50-ns"
	P99         = "p99-ns"
	Max         = "max-ns"
	BytesPerOp  = "B/op"
	AllocsPerOp = "allocs/op"
	FailedPerOp = "failed/op"
	// Lone's and HandoffFloor's: the floor's p50, and the floor's p50 over
	// the driver's, both measured in turn with the driver's operations (see
	// bench.Lone, bench.HandoffFloor).
	FloorP50 = "floor-p50-ns"
	XFloor   = "x-floor"
	// Handoff's waits: how long a locker waited in Lock, median and longest.
	WaitP50 = "wait-p50-ns"
	WaitMax = "wait-max-ns"
	// The Scale case's metrics (see bench.Scale).
	Held          = "held"
	Lost          = "lost"
	Errors        = "errors"
	BytesPerLock  = "B/lock"
	CPUPerLockSec = "cpu-ns/lock-s"
	AcquireNs     = "acquire-ns"
	ReleaseNs     = "release-ns"
)

// A Line is one benchmark result line of `go test -bench` output.
type Line struct {
	// Name is the benchmark's name without "Benchmark" and without the
	// GOMAXPROCS suffix: "Lock/rueidis/nodes=5/lockers=64".
	Name string
	// N is the number of iterations.
	N int
	// Metrics are the values by unit: "ns/op", "ops/s", "allocs/op", ...
	Metrics map[string]float64
}

// procsSuffix is the "-2" that go test appends to a name when GOMAXPROCS > 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// ParseLines returns the result lines in the output of a benchmark run, and
// the "cpu:" line's value if there is one.
func ParseLines(out string) (lines []Line, cpu string) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		text := sc.Text()
		if v, ok := strings.CutPrefix(text, "cpu: "); ok {
			cpu = strings.TrimSpace(v)
			continue
		}
		if l, ok := parseLine(text); ok {
			lines = append(lines, l)
		}
	}
	return lines, cpu
}

// parseLine parses "BenchmarkX/y-2  100  123 ns/op  4.5 ops/s ...".
func parseLine(text string) (Line, bool) {
	f := strings.Fields(text)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return Line{}, false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return Line{}, false
	}
	l := Line{
		Name:    procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), ""),
		N:       n,
		Metrics: make(map[string]float64, (len(f)-2)/2),
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Line{}, false
		}
		l.Metrics[f[i+1]] = v
	}
	if _, ok := l.Metrics[NsPerOp]; !ok {
		return Line{}, false
	}
	return l, true
}

// benchPattern returns the -test.bench pattern that selects exactly the
// benchmark named name ("Lock/rueidis/nodes=5/lockers=64").
func benchPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if i == 0 {
			p = "Benchmark" + p
		}
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
