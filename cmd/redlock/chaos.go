package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/chaos"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

type chaosOptions struct {
	cfg     chaos.Config
	drivers string
	faults  string
	verbose bool
}

func chaosCommand() *cobra.Command {
	var o chaosOptions
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Soak the lock in faults on local nodes and check for overlapping holders",
		Long: `chaos starts local redis-server processes, each behind a fault-injecting
proxy, and runs contenders for one key through every driver while a random
schedule applies to a minority of the nodes at a time the faults Redlock is
meant to survive: pause (SIGSTOP), cut connections, blackhole, latency, lost
replies, and kill with a delayed restart. Every grant is recorded as the
interval in which its holder may act; at the end, every pair is checked.

It prints grants by driver, faults by kind and overlaps (two holders at once),
and exits with 1 if there was any overlap or the harness failed, 0 otherwise.
Interrupt it to stop early: the report covers what ran. It needs redis-server.`,
		Example: `  redlock chaos --duration 30s
  redlock chaos --duration 5m --drivers rueidis --contenders 4 -v
  redlock chaos --faults pause,kill+delayed-restart --seed 42`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runChaos(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.cfg.Duration, "duration", 30*time.Second, "how long the contenders compete")
	f.StringVar(&o.drivers, "drivers", "goredis,redigo,rueidis", "comma-separated drivers the contenders use")
	f.IntVar(&o.cfg.Nodes, "nodes", 5, "how many redis-server processes to start (at least 3)")
	f.IntVar(&o.cfg.Contenders, "contenders", 2, "contenders per driver")
	f.DurationVar(&o.cfg.TTL, "ttl", 500*time.Millisecond, "the locks' time to live; short, so that delayed restarts are short")
	f.DurationVar(&o.cfg.NodeTimeout, "node-timeout", 100*time.Millisecond, "bounds each call to one node; below --ttl")
	f.DurationVar(&o.cfg.FaultEvery, "fault-every", 100*time.Millisecond, "mean time between the starts of two faults")
	f.StringVar(&o.faults, "faults", "", fmt.Sprintf("comma-separated kinds of fault (default all: %v)", chaos.AllFaults))
	f.Uint64Var(&o.cfg.Seed, "seed", 0, "seed of the random schedule; 0 picks one, which the report shows")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "print every fault as it is applied and healed")
	return cmd
}

func runChaos(ctx context.Context, stdout, stderr io.Writer, o chaosOptions) error {
	cfg := o.cfg
	if cfg.Duration <= 0 {
		return usageErrorf("chaos: --duration %v is not positive", cfg.Duration)
	}
	cfg.Drivers = splitList(o.drivers)
	for _, d := range cfg.Drivers {
		if d == "memory" || !slices.Contains(redlock.Drivers(), d) {
			return usageErrorf("chaos: unknown driver %q; the drivers are goredis, redigo and rueidis", d)
		}
	}
	for _, f := range splitList(o.faults) {
		cfg.Faults = append(cfg.Faults, chaos.Fault(f))
	}
	p := newProgress(stderr)
	if o.verbose {
		cfg.Logf = func(format string, args ...any) { p.line(fmt.Sprintf(format, args...)) }
	}

	type result struct {
		rep chaos.Report
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rep, err := chaos.Run(ctx, cfg)
		done <- result{rep, err}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var res result
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-tick.C:
			elapsed := time.Since(start)
			label := fmt.Sprintf("%v of %v", elapsed.Round(time.Second), cfg.Duration)
			if elapsed > cfg.Duration {
				label = "healing the last faults and stopping the nodes"
			}
			p.bar(float64(elapsed)/float64(cfg.Duration), label)
		}
	}
	p.finish()
	rep, err := res.rep, res.err
	if rep.Config.Drivers == nil && err != nil {
		if errors.Is(err, redistest.ErrNotInstalled) {
			return exitWith(exitFailure, fmt.Errorf("chaos needs redis-server: %w", err))
		}
		return exitWith(exitUsage, err) // a bad Config
	}
	fmt.Fprint(stdout, rep.String())
	switch {
	case err != nil:
		return exitWith(exitFailure, fmt.Errorf("chaos: %w", err))
	case !rep.Safe():
		return exitWith(exitFailure, fmt.Errorf("chaos: %d overlaps: two holders at once", len(rep.Overlaps)))
	}
	fmt.Fprintln(stdout, "No two holders ever overlapped.")
	return nil
}
