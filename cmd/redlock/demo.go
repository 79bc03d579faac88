package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/redisserver"
	"github.com/go-redlock/redlock/redlock"
)

// commandDrivers are the drivers the demo can use, by registered name, and
// those of run and hold, memory aside (which open them through the
// registry, redlock.Open); naming the packages also registers them.
var commandDrivers = map[string]driver.Driver{
	"goredis":  goredis.Driver{},
	"redigo":   redigo.Driver{},
	"rueidis":  rueidis.Driver{},
	"valkeygo": valkeygo.Driver{},
	"memory":   memory.Driver{},
}

// defaultDemoNodes is how many nodes demo starts without --nodes.
const defaultDemoNodes = 5

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
		Short: "Start local nodes and show the lock at work through every driver",
		Long: fmt.Sprintf(`demo starts --nodes local nodes, %d by default (redis-server processes on
loopback ports when redis-server is on PATH, or %s names the
program, otherwise in-process memory nodes, and it says which and why)
and shows, through every driver:
`, defaultDemoNodes, redisserver.ServerEnv) + `
  1. contention: contenders through every driver compete for one key, and
     never two hold it at once;
  2. hand-off: a waiter takes the lock after its holder releases it, and how
     long that takes;
  3. a lost lock detected: the key is deleted underneath a holder on every
     node, and Do cancels the holder's context with ErrLockLost;
  4. fencing tokens rising with every grant, across drivers, and a stale
     token refused by the protected resource;

then prints a table. It needs no flags and stops its nodes when it ends.`,
		Example: "  redlock demo\n  redlock demo --duration 10s --contenders 8\n  redlock demo --memory",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, stopSignals...)
			defer signal.Stop(sigs)
			ctx, cancel := context.WithCancelCause(cmd.Context())
			defer cancel(nil)
			go func() {
				select {
				case sig := <-sigs:
					cancel(signalError{sig})
				case <-ctx.Done():
				}
			}()
			err := runDemo(ctx, cmd.OutOrStdout(), o)
			var serr signalError
			if errors.As(context.Cause(ctx), &serr) {
				// As a shell reports a command a signal ended: 128 + N.
				return exitWith(signalExitCode(serr.sig), fmt.Errorf("demo: %v: stopped, and its nodes with it", serr.sig))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", defaultDemoNodes, fmt.Sprintf("how many local nodes to start, 1 to %d (redlock.MaxNodes)", redlock.MaxNodes))
	f.IntVar(&o.contenders, "contenders", 4, "contenders per driver in the contention part")
	f.DurationVar(&o.duration, "duration", 3*time.Second, "how long the contenders compete")
	f.BoolVar(&o.memory, "memory", false, "use in-process memory nodes even when redis-server is available")
	return cmd
}

// demoEnv is the nodes of a demo.
type demoEnv struct {
	kind    string              // "redis-server" or "memory"
	drivers []string            // the drivers that take part, sorted
	addrs   map[string][]string // by driver: the addresses to open
	// deleteKey deletes key on every node, as an eviction or a clock jump
	// would, underneath its holder.
	deleteKey func(ctx context.Context, key string) error
	stop      func()
	latency   *nodeLatencies // the contention part's node calls
}

// startDemoNodes starts the nodes.
func startDemoNodes(ctx context.Context, w io.Writer, o demoOptions) (*demoEnv, error) {
	if !o.memory {
		servers, err := startServers(ctx, o.nodes)
		if err == nil {
			addrs := redisserver.Addrs(servers)
			fmt.Fprintf(w, "Started %d redis-server processes on %s.\n", len(servers), strings.Join(addrs, ", "))
			return &demoEnv{
				kind:    "redis-server",
				drivers: []string{"goredis", "redigo", "rueidis", "valkeygo"},
				addrs:   map[string][]string{"goredis": addrs, "redigo": addrs, "rueidis": addrs, "valkeygo": addrs},
				deleteKey: func(ctx context.Context, key string) error {
					var errs []error
					for _, s := range servers {
						if _, err := s.Do(ctx, "DEL", key); err != nil {
							errs = append(errs, err)
						}
					}
					return errors.Join(errs...)
				},
				stop: func() {
					for _, s := range servers {
						s.Close()
					}
				},
			}, nil
		}
		if !errors.Is(err, redisserver.ErrNotInstalled) {
			return nil, err
		}
		why := "redis-server is not on PATH"
		if name := os.Getenv(redisserver.ServerEnv); name != "" {
			why = fmt.Sprintf("%s=%q names no program that can be run", redisserver.ServerEnv, name)
		}
		fmt.Fprintf(w, "%s, so this demo uses in-process memory nodes.\n(%s)\n", why, redisserver.InstallHint)
	}
	addrs := memoryAddrs(o.nodes)
	fmt.Fprintf(w, "Using %d in-process memory nodes (driver %q): every client below is in this process.\n", o.nodes, "memory")
	return &demoEnv{
		kind:      "memory",
		drivers:   []string{"memory"},
		addrs:     map[string][]string{"memory": addrs},
		deleteKey: func(_ context.Context, key string) error { return deleteMemory(addrs, key) },
		stop:      func() {},
	}, nil
}

// demoRuns counts the demos of this process, so that each has memory nodes
// of its own.
var demoRuns atomic.Int64

// memoryAddrs names n memory stores fresh for this demo.
func memoryAddrs(n int) []string {
	run := demoRuns.Add(1)
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("demo-%d-node-%d", run, i+1)
	}
	return addrs
}

// deleteMemory deletes key on the memory stores at addrs.
func deleteMemory(addrs []string, key string) error {
	for _, a := range addrs {
		n, err := memory.Open(a)
		if err != nil {
			return err
		}
		n.Delete(key)
		n.Close()
	}
	return nil
}

func startServers(ctx context.Context, n int) ([]*redisserver.Server, error) {
	return redisserver.StartN(ctx, n)
}

// driverStats is what the demo saw of one driver.
type driverStats struct {
	name    string
	grants  int
	lock    []time.Duration // Lock call to grant, contended
	unlock  []time.Duration
	failed  int
	lastErr error

	handoff      []time.Duration // holder's Unlock to waiter's grant
	notifies     bool            // the driver's nodes publish releases
	lostAfter    time.Duration   // key deleted to Do's context canceled; 0 if never
	lostCause    error
	lostReturned error // what Do returned
	tokens       []uint64
	fenceErr     error
}

func runDemo(ctx context.Context, w io.Writer, o demoOptions) error {
	switch {
	case o.nodes < 1:
		return usageErrorf("demo: --nodes %d is not positive", o.nodes)
	case o.contenders < 1:
		return usageErrorf("demo: --contenders %d is not positive", o.contenders)
	case o.duration <= 0:
		return usageErrorf("demo: --duration %v is not positive", o.duration)
	}
	if o.nodes > redlock.MaxNodes {
		// Refused before the nodes start: a Client takes no more.
		return usageErrorf("demo: --nodes %d: a Client takes at most %d nodes (redlock.MaxNodes)", o.nodes, redlock.MaxNodes)
	}
	start := time.Now()
	env, err := startDemoNodes(ctx, w, o)
	if err != nil {
		return err
	}
	defer env.stop()
	env.latency = newNodeLatencies()
	stats := make([]*driverStats, len(env.drivers))
	for i, name := range env.drivers {
		stats[i] = &driverStats{name: name, notifies: notifies(name, env.addrs[name][0])}
	}

	var failures []error
	fmt.Fprintf(w, "\n1. Contention: %d contenders per driver (%s) compete for one key for %v.\n",
		o.contenders, strings.Join(env.drivers, ", "), o.duration)
	if err := demoContention(ctx, env, stats, o); err != nil {
		failures = append(failures, err)
		fmt.Fprintf(w, "   %v\n", err)
	} else {
		total := 0
		for _, st := range stats {
			total += st.grants
		}
		fmt.Fprintf(w, "   %d grants, and never two holders at once.\n", total)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	fmt.Fprintf(w, "\n2. Hand-off: a holder releases, and a waiter in Lock takes the lock.\n")
	for _, st := range stats {
		err := demoHandoff(ctx, env, st)
		how := "by polling with jittered backoff: the driver does not publish releases (driver.Notifier)"
		if st.notifies {
			how = "woken by the release published on the nodes (driver.Notifier)"
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("hand-off through %s: %w", st.name, err))
			fmt.Fprintf(w, "   %-8s failed: %s\n", st.name, oneLine(err))
			continue
		}
		fmt.Fprintf(w, "   %-8s the waiter held the lock %v (median of %d) after the release began, %s.\n",
			st.name, percentile(st.handoff, 50), len(st.handoff), how)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	fmt.Fprintf(w, "\n3. A lost lock detected: Do holds a lock (TTL 2s, extended every 100ms); its key is deleted on every node underneath it.\n")
	demoLost(ctx, env, stats)
	for _, st := range stats {
		if st.lostAfter == 0 || !errors.Is(st.lostReturned, redlock.ErrLockLost) {
			failures = append(failures, fmt.Errorf("lost lock through %s: not detected (Do returned %v)", st.name, st.lostReturned))
			fmt.Fprintf(w, "   %-8s NOT detected: Do returned %v\n", st.name, oneLine(st.lostReturned))
			continue
		}
		fmt.Fprintf(w, "   %-8s Do canceled its function's context %v after the deletion (cause: %v) and returned ErrLockLost.\n",
			st.name, st.lostAfter.Round(time.Millisecond), st.lostCause)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	fmt.Fprintf(w, "\n4. Fencing tokens (WithFencing): one key granted again and again, through the drivers in turn.\n")
	if err := demoFencing(ctx, w, env, stats); err != nil {
		failures = append(failures, err)
		fmt.Fprintf(w, "   %v\n", err)
	}

	fmt.Fprintln(w)
	printDemoTable(w, stats, o.duration)
	fmt.Fprintf(w, "\nLock latency includes waiting for the other contenders: all drivers share one key.\n")
	env.latency.print(w)
	for _, st := range stats {
		if st.lastErr != nil {
			fmt.Fprintf(w, "%s: %d errors; the last: %s\n", st.name, st.failed, oneLine(st.lastErr))
		}
	}
	fmt.Fprintf(w, "Nodes: %s. Finished in %v.\n", env.kind, time.Since(start).Round(100*time.Millisecond))
	if len(failures) > 0 {
		return exitWith(exitFailure, errors.Join(failures...))
	}
	return nil
}

// notifies reports whether name's nodes publish releases.
func notifies(name, addr string) bool {
	d, ok := commandDrivers[name]
	if !ok {
		return false
	}
	n, err := d.Open(addr)
	if err != nil {
		return false
	}
	defer n.Close()
	_, ok = n.(driver.Notifier)
	return ok
}

// demoContention runs the contenders of every driver for o.duration on one
// key, and fails if two ever held it at once.
func demoContention(ctx context.Context, env *demoEnv, stats []*driverStats, o demoOptions) error {
	const key = "demo:shared-resource"
	var (
		inside   atomic.Int32 // holders right now, across every driver
		overlaps atomic.Int32
		wg       sync.WaitGroup
	)
	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	for _, st := range stats {
		client, err := redlock.Open(st.name, env.addrs[st.name], redlock.WithTTL(5*time.Second), redlock.WithObserver(env.latency))
		if err != nil {
			return err
		}
		defer client.Close()
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
	if n := overlaps.Load(); n > 0 {
		return fmt.Errorf("two holders at once %d times: mutual exclusion broken", n)
	}
	return nil
}

// handoffs is how many hand-offs the demo measures per driver.
const handoffs = 5

// demoHandoff measures hand-offs between two clients of one driver: the
// holder releases while the waiter is in Lock.
func demoHandoff(ctx context.Context, env *demoEnv, st *driverStats) error {
	key := "demo:handoff:" + st.name
	holder, err := redlock.Open(st.name, env.addrs[st.name])
	if err != nil {
		return err
	}
	defer holder.Close()
	waiter, err := redlock.Open(st.name, env.addrs[st.name])
	if err != nil {
		return err
	}
	defer waiter.Close()
	for range handoffs {
		l, err := holder.Lock(ctx, key)
		if err != nil {
			return err
		}
		type grant struct {
			l   *redlock.Lock
			at  time.Time
			err error
		}
		got := make(chan grant, 1)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		go func() {
			l, err := waiter.Lock(wctx, key)
			got <- grant{l, time.Now(), err}
		}()
		// Let the waiter fail once and settle into waiting.
		time.Sleep(50 * time.Millisecond)
		released := time.Now()
		if err := l.Unlock(ctx); err != nil {
			cancel()
			return err
		}
		g := <-got
		cancel()
		if g.err != nil {
			return g.err
		}
		st.handoff = append(st.handoff, g.at.Sub(released))
		if err := g.l.Unlock(ctx); err != nil {
			return err
		}
	}
	return nil
}

// demoLost runs Do through every driver at once, deletes its key on every
// node, and records how long Do took to cancel its function's context.
func demoLost(ctx context.Context, env *demoEnv, stats []*driverStats) {
	var wg sync.WaitGroup
	for _, st := range stats {
		wg.Go(func() {
			key := "demo:lost:" + st.name
			client, err := redlock.Open(st.name, env.addrs[st.name],
				redlock.WithTTL(2*time.Second), redlock.WithExtendInterval(100*time.Millisecond))
			if err != nil {
				st.lostReturned = err
				return
			}
			defer client.Close()
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			st.lostReturned = client.Do(dctx, key, func(fctx context.Context) error {
				if err := env.deleteKey(ctx, key); err != nil {
					return err
				}
				deleted := time.Now()
				select {
				case <-fctx.Done():
					if errors.Is(context.Cause(fctx), redlock.ErrLockLost) {
						st.lostAfter, st.lostCause = time.Since(deleted), context.Cause(fctx)
					}
					return nil
				case <-dctx.Done():
					return dctx.Err()
				}
			})
		})
	}
	wg.Wait()
}

// fencedGrants is how many grants the fencing part makes.
const fencedGrants = 6

// demoFencing grants one key repeatedly through the drivers in turn, with
// fencing tokens, checks that they rise, and shows a stale token refused.
func demoFencing(ctx context.Context, w io.Writer, env *demoEnv, stats []*driverStats) error {
	const key = "demo:fenced"
	type fenced struct {
		st     *driverStats
		client *redlock.Client
	}
	var clients []fenced
	for _, st := range stats {
		c, err := redlock.Open(st.name, env.addrs[st.name], redlock.WithFencing())
		if err != nil {
			st.fenceErr = err
			fmt.Fprintf(w, "   %-8s cannot fence: %s\n", st.name, oneLine(err))
			continue
		}
		defer c.Close()
		clients = append(clients, fenced{st, c})
	}
	if len(clients) == 0 {
		// Show the idea on memory nodes rather than not at all.
		addrs := memoryAddrs(len(env.addrs[env.drivers[0]]))
		c, err := redlock.Open("memory", addrs, redlock.WithFencing())
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(w, "   No driver of these nodes keeps fencing counters (driver.Fencer): showing tokens on %d memory nodes instead.\n", len(addrs))
		clients = append(clients, fenced{&driverStats{name: "memory"}, c})
	}
	var (
		store fencedStore // the protected resource
		stale uint64      // the token of a holder that pauses and writes late
		last  uint64
		line  = make([]string, 0, fencedGrants)
	)
	for i := range fencedGrants {
		f := clients[i%len(clients)]
		l, err := f.client.Lock(ctx, key)
		if err != nil {
			return fmt.Errorf("fencing through %s: %w", f.st.name, err)
		}
		tok := l.Token()
		werr := store.write(tok)
		uerr := l.Unlock(ctx)
		switch {
		case tok <= last:
			return fmt.Errorf("fencing: token %d through %s after %d: tokens must rise", tok, f.st.name, last)
		case werr != nil:
			return fmt.Errorf("fencing through %s: %w", f.st.name, werr)
		case uerr != nil:
			return fmt.Errorf("fencing through %s: %w", f.st.name, uerr)
		}
		if i == 1 {
			stale = tok
		}
		last = tok
		f.st.tokens = append(f.st.tokens, tok)
		line = append(line, fmt.Sprintf("%d (%s)", tok, f.st.name))
	}
	fmt.Fprintf(w, "   tokens: %s: rising with every grant.\n", strings.Join(line, ", "))
	err := store.write(stale)
	if err == nil {
		return fmt.Errorf("fencing: the store accepted the stale token %d after %d", stale, last)
	}
	fmt.Fprintf(w, "   The holder of token %d pauses past its lock and writes late: %v.\n", stale, err)
	fmt.Fprintf(w, "   No lock service can stop a paused client; a resource that checks tokens can.\n")
	return nil
}

// fencedStore is a resource that checks fencing tokens: it refuses a write
// with a token lower than the highest it has seen.
type fencedStore struct{ highest uint64 }

func (s *fencedStore) write(token uint64) error {
	if token < s.highest {
		return fmt.Errorf("refused by the store, which has seen token %d", s.highest)
	}
	s.highest = token
	return nil
}

// printDemoTable prints the summary, a row per driver.
func printDemoTable(w io.Writer, stats []*driverStats, d time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "driver\tgrants\tgrants/s\tlock p50\tlock p99\tunlock p50\thand-off p50\tlost lock noticed\tfencing tokens\terrors\t")
	for _, st := range stats {
		lost := "no"
		if st.lostAfter > 0 {
			lost = "after " + st.lostAfter.Round(time.Millisecond).String()
		}
		tokens := "-"
		if len(st.tokens) > 0 {
			ts := make([]string, len(st.tokens))
			for i, t := range st.tokens {
				ts[i] = fmt.Sprint(t)
			}
			tokens = strings.Join(ts, " ")
		}
		handoff := "-"
		if len(st.handoff) > 0 {
			handoff = percentile(st.handoff, 50).String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%v\t%v\t%v\t%s\t%s\t%s\t%d\t\n", st.name, st.grants,
			float64(st.grants)/d.Seconds(),
			percentile(st.lock, 50), percentile(st.lock, 99), percentile(st.unlock, 50),
			handoff, lost, tokens, st.failed)
	}
	tw.Flush()
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

// oneLine joins the lines of err's text (errors.Join puts each error on a
// line of its own).
func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
