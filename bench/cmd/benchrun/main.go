// Command benchrun runs the benchmark suite for every driver, its client's
// floor and the peers, against five local redis-server processes, and writes
// bench/RESULTS.md and bench/results.svg:
//
//	cd bench && go run ./cmd/benchrun
//	cd bench && go run ./cmd/benchrun -bench 'Lock/.*/nodes=5' -rounds 5
//	cd bench && go run ./cmd/benchrun -quick            # a first look in a few minutes
//
// Progress goes to standard error, the markdown report to standard output.
// See package benchrun for how it runs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/go-redlock/redlock/bench"
	"github.com/go-redlock/redlock/bench/benchrun"
)

func main() {
	var (
		cfg       benchrun.Config
		out       string
		jsonOut   string
		jsonInput string
	)
	flag.StringVar(&cfg.Bench, "bench", benchrun.DefaultBench, "`pattern` of the benchmarks to run, as go test -bench takes it")
	flag.StringVar(&cfg.Benchtime, "benchtime", "1s", "go test -benchtime of each run")
	flag.StringVar(&cfg.HandoffBenchtime, "handoff-benchtime", "100x", "go test -benchtime of each run of the Handoff and HandoffFloor cases")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "how many times each benchmark runs; the report gives medians")
	flag.IntVar(&cfg.ScaleLocks, "scale-locks", bench.DefaultScaleLocks, "how many locks the Scale case holds at once")
	flag.DurationVar(&cfg.ScaleFor, "scale-for", bench.DefaultScaleFor, "how long the Scale case holds them")
	quick := flag.Bool("quick", false, "a quick look: 1 round, benchtime 200ms, Handoff 30x, Scale 5,000 locks (flags given explicitly win)")
	flag.BoolVar(&cfg.NoPeers, "no-peers", false, "leave out the peers (package bench/peers)")
	flag.StringVar(&cfg.Dir, "dir", "", "root of the module github.com/go-redlock/redlock (default: the one holding the working directory)")
	flag.StringVar(&out, "out", "", "`directory` for "+benchrun.ResultsFile+" and "+benchrun.ChartFile+" (default: bench/ of the module); \"-\" writes no file")
	flag.StringVar(&jsonOut, "json", "", "also write the report's data to `file` as JSON")
	flag.StringVar(&jsonInput, "from", "", "run nothing: render the report from a JSON `file` written by -json")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: cd bench && go run ./cmd/benchrun [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *quick {
		set := make(map[string]bool)
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
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
	cfg.Progress = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var (
		rep *benchrun.Report
		err error
	)
	if jsonInput != "" {
		rep, err = readReport(jsonInput)
	} else {
		rep, err = benchrun.Run(ctx, cfg)
	}
	if err == nil && jsonOut != "" {
		err = writeReport(jsonOut, rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
	fmt.Print(rep.Markdown())
	if out == "-" {
		return
	}
	if out == "" {
		dir := rep.Config.Dir
		if jsonInput != "" { // the report may come from another checkout
			if dir, err = benchrun.FindModule("."); err != nil {
				fmt.Fprintln(os.Stderr, "benchrun:", err)
				os.Exit(1)
			}
		}
		out = filepath.Join(dir, "bench")
	}
	if err := rep.WriteFiles(out); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s in %s (%s)\n", benchrun.ResultsFile, benchrun.ChartFile, out, rep.Elapsed.Round(1e9))
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
