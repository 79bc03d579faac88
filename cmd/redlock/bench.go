package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/bench/benchrun"
)

type benchOptions struct {
	cfg benchrun.Config
	out string
}

func benchCommand() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmarks: every driver, its client's floor and the peers",
		Long: `bench runs the project's benchmark suite (package bench/benchrun) against five
local redis-server processes: lock+unlock on 1, 3 and 5 nodes at 1 and 64
lockers, Extend, hand-off and 2 of 5 nodes stalled, for every driver, for each
client's bare floor (SET NX PX then DEL, no lock logic) and for the peer
libraries (module bench/peers). Each benchmark runs alone, --rounds times,
the contenders alternating; the report gives medians.

It prints the markdown table and writes RESULTS.md and results.svg to --out.
It needs the source tree of the module (it compiles the benchmarks with the
go command) and redis-server. A full run takes several minutes.`,
		Example: `  redlock bench
  redlock bench --bench 'Lock/rueidis/nodes=5' --rounds 1 --no-peers --out -
  redlock bench --dir ~/src/go-redlock --out /tmp/results`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runBench(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.Bench, "bench", benchrun.DefaultBench, "pattern of the benchmarks to run, as go test -bench takes it")
	f.StringVar(&o.cfg.Benchtime, "benchtime", "1s", "go test -benchtime of each run")
	f.StringVar(&o.cfg.HandoffBenchtime, "handoff-benchtime", "100x", "go test -benchtime of each run of the Handoff case")
	f.IntVar(&o.cfg.Rounds, "rounds", 3, "how many times each benchmark runs; the report gives medians")
	f.BoolVar(&o.cfg.NoPeers, "no-peers", false, "leave out the peers (module bench/peers)")
	f.StringVar(&o.cfg.Dir, "dir", "", "root of the module github.com/go-redlock/redlock (default: the one holding the working directory)")
	f.StringVar(&o.out, "out", "", "directory for "+benchrun.ResultsFile+" and "+benchrun.ChartFile+` (default: bench/ of the module); "-" writes no file`)
	return cmd
}

func runBench(ctx context.Context, stdout, stderr io.Writer, o benchOptions) error {
	if o.cfg.Rounds < 1 {
		return usageErrorf("bench: --rounds %d is not positive", o.cfg.Rounds)
	}
	p := newProgress(stderr)
	pw := &benchProgress{p: p}
	o.cfg.Progress = pw
	rep, err := benchrun.Run(ctx, o.cfg)
	pw.flush()
	p.finish()
	if err != nil {
		return exitWith(exitFailure, err)
	}
	fmt.Fprint(stdout, rep.Markdown())
	if o.out == "-" {
		return nil
	}
	out := o.out
	if out == "" {
		out = filepath.Join(rep.Config.Dir, "bench")
	}
	if err := rep.WriteFiles(out); err != nil {
		return exitWith(exitFailure, err)
	}
	fmt.Fprintf(stderr, "wrote %s and %s in %s (%v)\n", benchrun.ResultsFile, benchrun.ChartFile, out, rep.Elapsed.Round(1e9))
	return nil
}

// benchStep matches benchrun's progress line for one finished run:
// "[ 12/90] round 1/3 ...".
var benchStep = regexp.MustCompile(`^\[\s*(\d+)/(\d+)\]\s*(.*)$`)

// benchProgress turns benchrun's progress lines into a bar: the lines of
// finished runs move the bar, the others are printed as they are.
type benchProgress struct {
	p *progress

	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *benchProgress) Write(data []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(data)
	for {
		line, err := b.buf.ReadString('\n')
		if err != nil {
			b.buf.WriteString(line) // incomplete: keep it for the next Write
			return len(data), nil
		}
		b.show(line[:len(line)-1])
	}
}

func (b *benchProgress) show(line string) {
	m := benchStep.FindStringSubmatch(line)
	if m == nil || !b.p.tty {
		b.p.line(line)
		return
	}
	done, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	if total > 0 {
		b.p.bar(float64(done)/float64(total), fmt.Sprintf("%d/%d %s", done, total, m[3]))
	}
}

// flush prints what is left of an incomplete line.
func (b *benchProgress) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 0 {
		b.show(b.buf.String())
		b.buf.Reset()
	}
}
