// Command tracecount counts, per operation of one benchmark of package bench,
// the goroutines created and the wakes of blocked goroutines, from runtime
// traces:
//
//	cd bench && go run ./cmd/tracecount
//	cd bench && go run ./cmd/tracecount -bench '^BenchmarkLock$/^goredis$/^nodes=5$/^lockers=1$' -n 2000
//
// It builds the package's test binary (go test -c; or takes one with -test),
// runs the benchmark twice with a runtime trace (-test.trace), n and 2n
// operations (-test.benchtime Nx), reads each trace with `go tool trace
// -d=parsed`, and prints, as a markdown table, the difference of the two
// runs' counts divided by n: what n more operations cost, without the
// set-up both runs share (servers' clients, the warm-up run of one
// operation, the proxy). The pattern must select exactly one benchmark.
// Ctrl-C or SIGTERM stops it: its temporary directory is removed, exit 1.
//
// A wake is a goroutine's transition from waiting to runnable, counted by
// why and where it had blocked: the reason the trace gives (select, chan
// receive, network, sync, sleep, ...) and the innermost frame of its
// blocking stack outside the standard library. A goroutine created is
// counted by its start function and the innermost frame outside the
// standard library of the goroutine that created it. The "library" totals
// are those whose frame is in module github.com/go-redlock/redlock but not
// in its bench module (the benchmark, its proxy).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/go-redlock/redlock/bench/benchrun"
	"github.com/go-redlock/redlock/internal/stopsignal"
)

// defaultBench is the Far case at one locker, goredis.
const defaultBench = "^BenchmarkFar$/^goredis$/^nodes=5$/^far=2$/^lockers=1$"

func main() {
	bench := flag.String("bench", defaultBench, "`pattern` of the one benchmark to trace, as go test -bench takes it")
	n := flag.Int("n", 1000, "operations of the shorter run; the longer runs 2n")
	testBin := flag.String("test", "", "`path` of the bench package's test binary (default: built with go test -c in the current directory, which must be bench/)")
	top := flag.Int("top", 15, "how many labels of each kind to list")
	flag.Parse()
	if *n < 1 || *top < 1 {
		fmt.Fprintln(os.Stderr, "tracecount: -n and -top must be at least 1")
		os.Exit(2)
	}
	if flag.NArg() > 0 { // a benchmark's name given without -bench, say
		fmt.Fprintf(os.Stderr, "tracecount: unexpected argument %q (the benchmark goes in -bench)\n", flag.Arg(0))
		os.Exit(2)
	}
	if err := benchrun.CheckPattern(*bench); err != nil { // as go test -bench compiles it: each part between slashes by itself
		fmt.Fprintf(os.Stderr, "tracecount: -bench %s: want a regular expression, as go test -bench takes: %v\n", *bench, err)
		os.Exit(2)
	}
	// Ctrl-C or SIGTERM ends the builds and runs, and run removes its
	// temporary directory (the built test binary, the traces) before the
	// command exits 1.
	ctx, stop := stopsignal.Context()
	err := run(ctx, *bench, *n, *testBin, *top, os.Stdout)
	if err != nil && ctx.Err() != nil { // say why, not only what it did to go test or the benchmark
		err = fmt.Errorf("stopped (%v): %w", context.Cause(ctx), err)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracecount:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bench string, n int, testBin string, top int, out io.Writer) error {
	dir, err := os.MkdirTemp("", "tracecount-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if testBin == "" {
		testBin = filepath.Join(dir, "bench.test")
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", testBin, ".")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go test -c: %w\n%s", err, msg)
		}
	}
	var runs [2]*counts
	var lines [2]string
	for i, ops := range []int{n, 2 * n} {
		trace := filepath.Join(dir, fmt.Sprintf("trace-%d.out", ops))
		line, err := runBench(ctx, testBin, bench, ops, trace)
		if err != nil {
			return err
		}
		lines[i] = line
		fmt.Fprintf(os.Stderr, "%d ops: %s\n", ops, line)
		if runs[i], err = readTrace(ctx, trace); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "Per operation: (counts of %d ops − counts of %d ops) / %d, `%s`\n\n", 2*n, n, n, bench)
	fmt.Fprintf(out, "    %s\n    %s\n\n", lines[0], lines[1])
	report(out, runs[0], runs[1], n, top)
	return nil
}

// benchLine matches a benchmark's result line.
var benchLine = regexp.MustCompile(`^Benchmark\S+\s+\d+\s`)

// runBench runs the one benchmark that pattern selects, ops times, with a
// trace written to trace, and returns its result line.
func runBench(ctx context.Context, testBin, pattern string, ops int, trace string) (string, error) {
	cmd := exec.CommandContext(ctx, testBin, "-test.run", "^$", "-test.bench", pattern,
		"-test.benchtime", fmt.Sprintf("%dx", ops), "-test.benchmem", "-test.trace", trace)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", testBin, err, msg)
	}
	var found []string
	for _, l := range strings.Split(string(msg), "\n") {
		if benchLine.MatchString(l) {
			found = append(found, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("-bench %q ran %d benchmarks, want 1:\n%s", pattern, len(found), msg)
	}
	return found[0], nil
}

// readTrace counts the events of the trace file trace, read through go tool
// trace -d=parsed.
func readTrace(ctx context.Context, trace string) (*counts, error) {
	cmd := exec.CommandContext(ctx, "go", "tool", "trace", "-d=parsed", trace)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c, perr := parse(stdout)
	if perr != nil {
		io.Copy(io.Discard, stdout) // let the command end
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go tool trace -d=parsed %s: %w\n%s", trace, err, stderr.String())
	}
	return c, perr
}
