package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/drivers/goredis"
	_ "github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The driver packages register themselves; naming them keeps the imports.
var (
	_ = goredis.Driver{}
	_ = redigo.Driver{}
	_ = rueidis.Driver{}
)

type demoOptions struct {
	nodes      int
	contenders int
	duration   time.Duration
	memory     bool
}

func demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start local nodes and show contention through every driver",
		Long: `demo starts five local nodes (redis-server processes on loopback ports when
redis-server is on PATH, otherwise in-process memory nodes, and it says which),
runs contenders for one key through every driver at once, checks that no two
ever hold the lock together, and prints grants and latency per driver.`,
		Example: "  redlock demo\n  redlock demo --duration 10s --contenders 8\n  redlock demo --memory",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 5, "how many local nodes to start")
	f.IntVar(&o.contenders, "contenders", 4, "contenders per driver")
	f.DurationVar(&o.duration, "duration", 3*time.Second, "how long the contenders compete")
	f.BoolVar(&o.memory, "memory", false, "use in-process memory nodes even when redis-server is available")
	return cmd
}

// demoNodes starts the nodes and returns, per driver name, the addresses to open.
func demoNodes(ctx context.Context, w io.Writer, o demoOptions) (map[string][]string, func(), error) {
	if !o.memory {
		servers, err := startServers(ctx, o.nodes)
		if err == nil {
			addrs := make([]string, len(servers))
			for i, s := range servers {
				addrs[i] = s.Addr()
			}
			fmt.Fprintf(w, "Started %d redis-server processes: %v\n", len(servers), addrs)
			stop := func() {
				for _, s := range servers {
					s.Close()
				}
			}
			return map[string][]string{"goredis": addrs, "redigo": addrs, "rueidis": addrs}, stop, nil
		}
		if !errors.Is(err, redistest.ErrNotInstalled) {
			return nil, nil, err
		}
		fmt.Fprintf(w, "redis-server is not on PATH, so this demo uses in-process memory nodes.\n%s\n", redistest.InstallHint)
	}
	addrs := make([]string, o.nodes)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("demo-node-%d", i+1)
	}
	fmt.Fprintf(w, "Using %d in-process memory nodes (driver %q).\n", o.nodes, "memory")
	return map[string][]string{"memory": addrs}, func() {}, nil
}

func startServers(ctx context.Context, n int) ([]*redistest.Server, error) {
	servers := make([]*redistest.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i], errs[i] = redistest.Start(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
		return nil, err
	}
	return servers, nil
}

// driverStats is what one driver's contenders saw.
type driverStats struct {
	name    string
	grants  int
	lock    []time.Duration // Lock call to grant, uncontended and contended
	unlock  []time.Duration
	failed  int
	lastErr error
}

func runDemo(ctx context.Context, w io.Writer, o demoOptions) error {
	if o.nodes < 1 || o.contenders < 1 || o.duration <= 0 {
		return fmt.Errorf("--nodes, --contenders and --duration must be positive")
	}
	byDriver, stop, err := demoNodes(ctx, w, o)
	if err != nil {
		return err
	}
	defer stop()
	names := make([]string, 0, len(byDriver))
	for name := range byDriver {
		names = append(names, name)
	}
	slices.Sort(names)

	const key = "demo:shared-resource"
	var (
		inside   atomic.Int32 // holders right now, across every driver
		overlaps atomic.Int32
		wg       sync.WaitGroup
	)
	stats := make([]*driverStats, len(names))
	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	fmt.Fprintf(w, "%d contenders per driver (%v) compete for %q for %v ...\n", o.contenders, names, key, o.duration)
	for i, name := range names {
		client, err := redlock.Open(name, byDriver[name], redlock.WithTTL(5*time.Second))
		if err != nil {
			return err
		}
		defer client.Close()
		st := &driverStats{name: name}
		stats[i] = st
		var mu sync.Mutex
		for range o.contenders {
			wg.Go(func() {
				for runCtx.Err() == nil {
					t0 := time.Now()
					l, err := client.Lock(runCtx, key)
					if err != nil {
						if runCtx.Err() == nil {
							mu.Lock()
							st.failed, st.lastErr = st.failed+1, err
							mu.Unlock()
						}
						continue
					}
					took := time.Since(t0)
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(200 * time.Microsecond) // the protected work
					inside.Add(-1)
					t1 := time.Now()
					uerr := l.Unlock(context.WithoutCancel(runCtx))
					mu.Lock()
					st.grants++
					st.lock = append(st.lock, took)
					st.unlock = append(st.unlock, time.Since(t1))
					if uerr != nil {
						st.failed, st.lastErr = st.failed+1, uerr
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "driver\tgrants\tgrants/s\tlock p50\tlock p99\tunlock p50\tunlock p99\terrors\t")
	for _, st := range stats {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%v\t%v\t%v\t%v\t%d\t\n", st.name, st.grants,
			float64(st.grants)/o.duration.Seconds(),
			percentile(st.lock, 50), percentile(st.lock, 99),
			percentile(st.unlock, 50), percentile(st.unlock, 99), st.failed)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Lock latency includes waiting for the other contenders; all drivers share one key, so each also blocks the others.")
	for _, st := range stats {
		if st.lastErr != nil {
			fmt.Fprintf(w, "%s: last error: %v\n", st.name, st.lastErr)
		}
	}
	if n := overlaps.Load(); n > 0 {
		return fmt.Errorf("two holders at once %d times: mutual exclusion broken", n)
	}
	fmt.Fprintln(w, "Mutual exclusion held: never two holders at once.")
	return nil
}

// percentile returns the p-th percentile of ds (nearest rank), rounded for
// display.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = max(1, min(i, len(s)))
	return s[i-1].Round(time.Microsecond)
}
