// Command benchrun runs the benchmark suite for every driver, its client's
// floor and the peers, against five local redis-server processes, and writes
// bench/RESULTS.md and bench/results.svg:
//
//	cd bench && go run ./cmd/benchrun
//	cd bench && go run ./cmd/benchrun -bench 'Lock/.*/nodes=5' -rounds 5
//	cd bench && go run ./cmd/benchrun -quick            # a first look in a few minutes
//
// Progress goes to standard error, the markdown report to standard output.
// Stopped by Ctrl-C or SIGTERM once some runs were made, it prints their
// report marked incomplete, writes it to -json and to an -out directory
// given (not over bench/RESULTS.md), and exits 1.
// See package benchrun for how it runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/bench/benchrun"
	"github.com/go-redlock/redlock/internal/stopsignal"
)

func main() {
	ctx, stop := stopsignal.Context() // Ctrl-C or SIGTERM: stop early, with what ran
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: it parses args, runs the suite (or reads -from) and
// returns the exit code: 0, 1 when the run or a file failed, 2 for bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg       benchrun.Config
		out       string
		jsonOut   string
		jsonInput string
	)
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Bench, "bench", benchrun.DefaultBench, "`pattern` of the benchmarks to run, as go test -bench takes it")
	fs.StringVar(&cfg.Benchtime, "benchtime", benchrun.DefaultBenchtime, "go test -benchtime of each run")
	fs.StringVar(&cfg.HandoffBenchtime, "handoff-benchtime", benchrun.DefaultHandoffBenchtime, "go test -benchtime of each run of the Handoff and HandoffFloor cases")
	fs.IntVar(&cfg.Rounds, "rounds", benchrun.DefaultRounds, "how many times each benchmark runs; the report gives medians")
	fs.IntVar(&cfg.ScaleLocks, "scale-locks", bench.DefaultScaleLocks, "how many locks the Scale case holds at once")
	fs.DurationVar(&cfg.ScaleFor, "scale-for", bench.DefaultScaleFor, "how long the Scale case holds them")
	quick := fs.Bool("quick", false, "a quick look: 1 round, benchtime 200ms, Handoff 30x, Scale 5,000 locks (flags given explicitly win)")
	fs.BoolVar(&cfg.NoPeers, "no-peers", false, "leave out the peers (package bench/peers); the report says so, and which target that leaves unchecked")
	fs.StringVar(&cfg.Dir, "dir", "", "the module github.com/go-redlock/redlock, its root or a directory inside it (default: the one holding the working directory)")
	fs.StringVar(&out, "out", "", "`directory` for "+benchrun.ResultsFile+" and "+benchrun.ChartFile+" (default: bench/ of the module); \"-\" writes no file")
	fs.StringVar(&jsonOut, "json", "", "also write the report's data to `file` as JSON")
	fs.StringVar(&jsonInput, "from", "", "run nothing: render the report from a JSON `file` written by -json")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cd bench && go run ./cmd/benchrun [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchrun: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	// benchrun.Config reads a zero or a negative value as its default: given
	// on the command line, it would run something else than asked for (three
	// rounds for -rounds 0), so it is refused.
	const count, times = "a positive count", "a positive duration or count of runs (1s, 100x)"
	for _, c := range []struct {
		name, want string
		bad        bool
	}{
		{"rounds", count, cfg.Rounds <= 0},
		{"scale-locks", count, cfg.ScaleLocks <= 0},
		{"scale-for", "a positive duration", cfg.ScaleFor <= 0},
		{"benchtime", times, !validBenchtime(cfg.Benchtime)},
		{"handoff-benchtime", times, !validBenchtime(cfg.HandoffBenchtime)},
		{"bench", "a regular expression, as go test -bench takes", benchrun.CheckPattern(cfg.Bench) != nil},
	} {
		if c.bad {
			fmt.Fprintf(stderr, "benchrun: -%s %s: want %s\n", c.name, fs.Lookup(c.name).Value, c.want)
			return 2
		}
	}
	if *quick {
		set := make(map[string]bool)
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["rounds"] {
			cfg.Rounds = 1
		}
		if !set["benchtime"] {
			cfg.Benchtime = "200ms"
		}
		if !set["handoff-benchtime"] {
			cfg.HandoffBenchtime = "30x"
		}
		if !set["scale-locks"] {
			cfg.ScaleLocks = 5000
		}
	}
	// Where the report goes is checked before a run of half an hour, not
	// after it.
	if out != "" && out != "-" {
		if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "benchrun: -out %s: not a directory\n", out)
			return 2
		}
	}
	if jsonOut != "" {
		if fi, err := os.Stat(filepath.Dir(jsonOut)); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "benchrun: -json %s: its directory does not exist\n", jsonOut)
			return 2
		}
	}
	cfg.Progress = stderr

	var (
		rep *benchrun.Report
		err error
	)
	if jsonInput != "" {
		rep, err = readReport(jsonInput)
	} else {
		rep, err = benchrun.Run(ctx, cfg)
	}
	code := 0
	if err != nil {
		fail(stderr, err)
		if rep == nil {
			return 1
		}
		// Stopped (Ctrl-C, SIGTERM) after some runs: what they measured is
		// printed, and written, marked incomplete; half an hour of runs
		// was lost otherwise.
		fmt.Fprintln(stderr, "benchrun: the report of the runs made follows, marked incomplete")
		code = 1
	}
	// The report is printed and its files written even when -json cannot be:
	// a run takes half an hour.
	if jsonOut != "" {
		if err := writeReport(jsonOut, rep); err != nil {
			fmt.Fprintln(stderr, "benchrun: -json:", err)
			code = 1
		}
	}
	fmt.Fprint(stdout, rep.Markdown())
	if out == "-" {
		return code
	}
	if out == "" && rep.Incomplete != "" {
		// Not over the full report kept in the repository.
		fmt.Fprintf(stderr, "benchrun: the report is incomplete: printed, not written to bench/%s (give -out DIR to write it)\n", benchrun.ResultsFile)
		return 1
	}
	if out == "" {
		dir := rep.Config.Dir
		if jsonInput != "" { // the report may come from another checkout
			if dir, err = benchrun.FindModule("."); err != nil {
				fail(stderr, err)
				return 1
			}
		}
		out = filepath.Join(dir, "bench")
	}
	if err := rep.WriteFiles(out); err != nil {
		fail(stderr, err)
		return 1
	}
	fmt.Fprintf(stderr, "wrote %s and %s in %s (%s)\n", benchrun.ResultsFile, benchrun.ChartFile, out, rep.Elapsed.Round(1e9))
	return code
}

// fail prints err on w prefixed by "benchrun: ", once: package benchrun's
// errors carry the prefix already.
func fail(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "benchrun: ") {
		msg = "benchrun: " + msg
	}
	fmt.Fprintln(w, msg)
}

// validBenchtime reports whether s is a go test -benchtime that runs
// something: a positive duration ("1s") or a positive count ("100x").
func validBenchtime(s string) bool {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		c, err := strconv.Atoi(n)
		return err == nil && c > 0
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// writeReport writes rep to path as JSON.
func writeReport(path string, rep *benchrun.Report) error {
	data, err := json.MarshalIndent(rep, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// readReport reads a report that writeReport wrote.
func readReport(path string) (*benchrun.Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep benchrun.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}
