// Command chaos soaks the lock in faults on local nodes and checks for
// overlapping holders.
//
// It starts local redis-server processes, each behind a fault-injecting proxy,
// and runs contenders for one key through every driver while a random schedule
// applies to a minority of the nodes at a time the faults Redlock is meant to
// survive: pause (SIGSTOP), cut connections, blackhole, latency, lost replies,
// and kill with a delayed restart. Every grant is recorded as the interval in
// which its holder may act; at the end, every pair is checked.
//
// While it runs, a line on standard error every -progress (5s) tells the
// grants, faults and overlaps so far. At the end it prints grants by driver,
// faults by kind and overlaps (two holders at once), and exits with 1 if
// there was any overlap or the harness failed, 2 for bad flags, 0 otherwise
// (-h included).
// Interrupt it (Ctrl-C, or SIGTERM as from kill or a CI job's timeout) to stop
// early: the report covers what ran; a second signal ends it at once. It
// needs redis-server. From the safety module:
//
//	go run ./cmd/chaos -duration 30s
//	go run ./cmd/chaos -duration 5m -drivers rueidis -contenders 4 -v
//	go run ./cmd/chaos -faults pause,kill+delayed-restart -seed 42
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	_ "github.com/go-redlock/redlock/drivers/goredis"
	_ "github.com/go-redlock/redlock/drivers/redigo"
	_ "github.com/go-redlock/redlock/drivers/rueidis"
	_ "github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/stopsignal"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
)

func main() {
	ctx, stop := stopsignal.Context() // Ctrl-C or SIGTERM: stop early, with what ran
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the soak and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg     chaos.Config
		drivers string
		faults  string
		verbose bool
	)
	f := flag.NewFlagSet("chaos", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long the contenders compete")
	f.StringVar(&drivers, "drivers", "goredis,redigo,rueidis,valkeygo", "comma-separated drivers the contenders use")
	f.IntVar(&cfg.Nodes, "nodes", 5, "how many redis-server processes to start (at least 3)")
	f.IntVar(&cfg.Contenders, "contenders", 2, "contenders per driver")
	f.DurationVar(&cfg.TTL, "ttl", 500*time.Millisecond, "the locks' time to live; short, so that delayed restarts are short")
	f.DurationVar(&cfg.NodeTimeout, "node-timeout", 100*time.Millisecond, "bounds each call to one node; below -ttl")
	f.DurationVar(&cfg.FaultEvery, "fault-every", 100*time.Millisecond, "mean time between the starts of two faults")
	f.StringVar(&faults, "faults", "", fmt.Sprintf("comma-separated kinds of fault (default all: %v)", chaos.AllFaults))
	f.Uint64Var(&cfg.Seed, "seed", 0, "seed of the random schedule; 0 picks one, which the report shows")
	f.DurationVar(&cfg.ProgressEvery, "progress", 5*time.Second, "how often a line on stderr tells the grants, faults and overlaps so far")
	f.BoolVar(&verbose, "v", false, "print every fault as it is applied and healed")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h: the flags were asked for
			return 0
		}
		return 2
	}
	if f.NArg() > 0 {
		fmt.Fprintf(stderr, "chaos: unexpected arguments %q\n", f.Args())
		return 2
	}
	if cfg.Duration <= 0 {
		fmt.Fprintf(stderr, "chaos: -duration %v is not positive\n", cfg.Duration)
		return 2
	}
	// chaos.Config reads a zero as its own default, not this command's:
	// a zero given here is refused rather than run another soak.
	for _, z := range []struct {
		flag string
		zero bool
	}{
		{"-nodes", cfg.Nodes == 0}, {"-contenders", cfg.Contenders == 0}, {"-ttl", cfg.TTL == 0},
		{"-node-timeout", cfg.NodeTimeout == 0}, {"-fault-every", cfg.FaultEvery == 0}, {"-progress", cfg.ProgressEvery == 0},
	} {
		if z.zero {
			fmt.Fprintf(stderr, "chaos: %s 0 is not positive\n", z.flag)
			return 2
		}
	}
	cfg.Drivers = splitList(drivers)
	for _, d := range cfg.Drivers {
		if d == "memory" || !slices.Contains(redlock.Drivers(), d) {
			fmt.Fprintf(stderr, "chaos: unknown driver %q; the drivers are goredis, redigo, rueidis and valkeygo\n", d)
			return 2
		}
	}
	for _, s := range splitList(faults) {
		cfg.Faults = append(cfg.Faults, chaos.Fault(s))
	}
	cfg.Progress = stderr
	if verbose {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	rep, err := chaos.Run(ctx, cfg)
	// chaos.Run's errors name where they come from already ("chaos: ...",
	// or "redistest: ..." when redis-server is missing).
	if rep.Config.Drivers == nil && err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, redistest.ErrNotInstalled) {
			return 1
		}
		return 2 // a bad Config
	}
	fmt.Fprint(stdout, rep.String())
	switch {
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 1
	case !rep.Safe():
		fmt.Fprintf(stderr, "chaos: %d overlaps: two holders at once\n", len(rep.Overlaps))
		return 1
	}
	fmt.Fprintln(stdout, "No two holders ever overlapped.")
	return 0
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
