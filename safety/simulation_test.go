package safety_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// defaultSchedules is how many schedules TestSimulation runs by default, in
// CI too (a few hundred): about 2 s, 6 s with -race.
const defaultSchedules = 300

var (
	simSchedules = flag.Int("schedules", defaultSchedules, "how many schedules TestSimulation runs")
	simSeed      = flag.Uint64("seed", 1, "seed of TestSimulation's first schedule; schedule i has seed+i")
	simWorkers   = flag.Int("sim.workers", 0, "schedules TestSimulation runs at once (0: GOMAXPROCS)")
	simReports   = flag.Int("sim.reports", 1, "failure reports TestSimulation prints per kind of violation")
	simRepeat    = flag.Int("sim.repeat", 1, "runs of each seed: goroutines that run at one virtual instant may interleave differently from run to run")
	simFull      = flag.Bool("sim.full", false, "failure reports show the whole trace, not the events about the key before the violation")
)

// TestSimulation runs the real redlock code over memory nodes inside
// testing/synctest bubbles, under random API use and faults, and checks
// every grant and call (see the checker in sim_checker_test.go). Time is the
// bubble's virtual time, so a 10s TTL costs nothing; a schedule's nodes,
// clients, operations and faults follow from its seed (goroutines that run at
// the same virtual instant may still interleave differently from run to run).
//
// Every tenth seed is an unsafe schedule, of a class Redlock does not
// tolerate; the test fails unless every unsafe class that ran was caught with
// a double grant. Any violation in a safe schedule fails it, with the seed and
// a shortened trace. To replay a schedule, run its seed alone, a few times:
// -schedules=1 -seed=S -sim.repeat=20.
func TestSimulation(t *testing.T) {
	if *simSchedules < 1 || *simRepeat < 1 {
		t.Fatalf("-schedules=%d -sim.repeat=%d: each must be at least 1, or the run checks nothing", *simSchedules, *simRepeat)
	}
	if *simWorkers < 0 || *simReports < 0 {
		t.Fatalf("-sim.workers=%d -sim.reports=%d: neither may be negative (-sim.workers=0: GOMAXPROCS)", *simWorkers, *simReports)
	}
	n := *simSchedules * *simRepeat
	workers := *simWorkers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	tot := &totals{first: map[string]uint64{}, kinds: map[string]int{}, reported: map[string]int{}}
	// The schedules allocate much and keep little: collect less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	var next atomic.Int64
	start := time.Now()
	t.Run("schedules", func(t *testing.T) {
		for w := range workers {
			t.Run(fmt.Sprint(w), func(t *testing.T) {
				t.Parallel()
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					tot.add(t, runSchedule(t, *simSeed+uint64(i)/uint64(*simRepeat)))
				}
			})
		}
	})
	elapsed := time.Since(start)

	caught, ran := 0, 0
	for c := unsafeClass(1); c <= numUnsafeClasses; c++ {
		if tot.classRun[c] == 0 {
			continue
		}
		ran++
		if tot.classCaught[c] > 0 {
			caught++
		} else {
			t.Errorf("unsafe class %s ran in %d schedules and no double grant was caught", c, tot.classRun[c])
		}
		t.Logf("unsafe class %s: caught in %d of %d schedules", c, tot.classCaught[c], tot.classRun[c])
		if tot.fencedRun[c] == 0 {
			continue
		}
		// The counters survive a stepped clock or an evicted key: fencing
		// is scenario 10's mitigation, so a resource that checks tokens
		// must see them rise in grant order despite the double grant. A
		// restart without persistence loses them: tokens may repeat there.
		if c.keepsCounters() && tot.fencedOrder[c] > 0 {
			t.Errorf("unsafe class %s keeps the fencing counters, yet tokens did not rise in grant order in %d of %d fenced schedules",
				c, tot.fencedOrder[c], tot.fencedRun[c])
		}
		t.Logf("unsafe class %s with fencing: tokens out of grant order in %d of %d schedules", c, tot.fencedOrder[c], tot.fencedRun[c])
	}
	if n >= unsafeEvery*numUnsafeClasses && ran < numUnsafeClasses {
		t.Errorf("only %d of %d unsafe classes ran", ran, numUnsafeClasses)
	}
	kinds := make([]string, 0, len(tot.kinds))
	for k := range tot.kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		t.Errorf("%s: %d violations in safe schedules, first in schedule %d (seed %d)", k, tot.kinds[k], tot.first[k]-*simSeed+1, tot.first[k])
	}
	t.Logf("%d schedules in %v: %.0f schedules/s with %d workers; %d node calls, %d per schedule",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), workers, nodeCalls.Load(), nodeCalls.Load()/int64(max(n, 1)))
	fmt.Printf("SIM: %d schedules, %d grants, %d faults, %d overlaps in safe schedules, %d/%d unsafe classes caught\n",
		n, tot.grants, tot.faults, tot.kinds[vOverlap], caught, ran)
}

// totals are TestSimulation's counts over all schedules.
type totals struct {
	mu          sync.Mutex
	grants      int
	faults      int
	classRun    [numUnsafeClasses + 1]int
	classCaught [numUnsafeClasses + 1]int
	fencedRun   [numUnsafeClasses + 1]int // unsafe schedules with fencing
	fencedOrder [numUnsafeClasses + 1]int // of those, the ones whose tokens did not rise in grant order
	kinds       map[string]int            // violations in safe schedules, by kind
	first       map[string]uint64         // the lowest seed with a violation of the kind
	reported    map[string]int            // failure reports printed, by kind
}

func (tot *totals) add(t *testing.T, sm *sim) {
	tot.mu.Lock()
	defer tot.mu.Unlock()
	tot.grants += len(sm.grants)
	tot.faults += sm.faults
	class := sm.s.class
	seen := map[string]bool{}
	for _, v := range sm.violations {
		if class != safeSchedule && v.kind != vLeak && v.kind != vPanic {
			continue // expected consequences of an unsafe fault
		}
		tot.kinds[v.kind]++
		if f, ok := tot.first[v.kind]; !ok || sm.s.seed < f {
			tot.first[v.kind] = sm.s.seed
		}
		if !seen[v.kind] && tot.reported[v.kind] < *simReports {
			tot.reported[v.kind]++
			t.Error(sm.failureReport(v))
		}
		seen[v.kind] = true
	}
	if class != safeSchedule {
		tot.classRun[class]++
		if sm.count(vOverlap) > 0 {
			tot.classCaught[class]++
		}
		if sm.s.fencing {
			tot.fencedRun[class]++
			if sm.count(vFencing) > 0 {
				tot.fencedOrder[class]++
				for _, v := range sm.violations {
					if v.kind == vFencing && class.keepsCounters() && tot.reported[v.kind] < *simReports {
						tot.reported[v.kind]++
						t.Error(sm.failureReport(v))
						break
					}
				}
			}
		}
	}
}

// runSchedule runs the schedule of seed in a bubble of its own and returns
// what the checker found. A bubble left with goroutines when its schedule
// ended, or deadlocked, makes synctest panic; that is recorded as a
// violation.
func runSchedule(t *testing.T, seed uint64) *sim {
	s := newSchedule(seed)
	sm := &sim{s: s}
	func() {
		defer func() {
			if p := recover(); p != nil {
				var at time.Duration // the bubble's clock is gone: the last event's
				if len(sm.trace) > 0 {
					at = sm.trace[len(sm.trace)-1].at
				}
				sm.violations = append(sm.violations, violation{kind: vLeak, at: at, msg: fmt.Sprint(p) + sm.leftovers()})
			}
		}()
		synctest.Test(t, func(*testing.T) { sm.run() })
	}()
	sm.analyze()
	return sm
}

// run is the root of a schedule's bubble.
func (sm *sim) run() {
	defer sm.recoverPanic("sim")
	s := sm.s
	sm.t0 = time.Now()
	sm.bubble = bubbleOf()
	sm.quorum = s.nodes/2 + 1
	for i := range s.nodes {
		c := newSimClock(s.rates[i])
		sm.clocks = append(sm.clocks, c)
		sm.mem = append(sm.mem, memory.New(memory.WithClock(c), memory.WithName(fmt.Sprintf("n%d", i))))
		if s.rates[i] != 1 {
			sm.fault("faults", "", "node %d's clock runs at rate %.5f", i, s.rates[i])
		}
	}
	sm.logf("sim", "", "%s", s)
	ctx := context.Background()
	clients := make([]*redlock.Client, s.clients)
	for ci := range clients {
		nodes := make([]driver.Node, s.nodes)
		for i, m := range sm.mem {
			nodes[i] = &simNode{m: m}
		}
		opts := []redlock.Option{
			redlock.WithTTL(s.ttl),
			redlock.WithNodeTimeout(s.nodeTimeout),
			redlock.WithDriftFactor(s.driftFactor),
			redlock.WithBackoff(s.backoff(uint64(2 + ci))),
		}
		if s.fencing {
			opts = append(opts, redlock.WithFencing())
		}
		c, err := redlock.New(nodes, opts...)
		if err != nil {
			sm.violate(vUnexpected, "", "New: %v", err)
			for _, c := range clients[:ci] {
				c.Close()
			}
			return
		}
		clients[ci] = c
	}

	var actors sync.WaitGroup
	for ci, c := range clients {
		for j := range s.actors[ci] {
			a := &actor{sm: sm, c: c, name: fmt.Sprintf("c%d.%d", ci, j), r: s.rng(uint64(100 + 10*ci + j)), ctx: ctx}
			actors.Go(func() {
				defer sm.recoverPanic(a.name)
				a.run()
			})
		}
	}
	stop := make(chan struct{})
	var injector sync.WaitGroup
	injector.Go(func() {
		if s.class == safeSchedule {
			sm.injectFaults(s.rng(1), stop)
		} else {
			sm.injectUnsafe(s.rng(1), stop)
		}
	})
	actors.Wait()
	close(stop)
	injector.Wait()
	for _, m := range sm.mem {
		m.SetDown(false)
		m.SetStalled(false)
		m.SetLoseReplies(false)
		m.SetLatency(0)
	}
	// Every lock whose holder did not release it clear of faults is
	// released now; those released clear of faults must be free already,
	// whatever context their Unlock had.
	sm.logf("sim", "", "actors done, faults healed; the locks not released clear of faults are unlocked")
	sm.mu.Lock()
	held := sm.held
	sm.mu.Unlock()
	for _, h := range held {
		sm.mu.Lock()
		clean := h.g.cleanRelease
		sm.mu.Unlock()
		if !clean {
			h.l.Unlock(ctx)
		}
	}

	// Liveness: with the faults healed and the holders gone, a waiter gets
	// each key within a TTL (a late SET's key may live that long) plus its
	// backoff, and a few round trips.
	for _, key := range s.keys {
		bound := s.ttl + s.backoffMax + 4*s.nodeTimeout
		lctx, cancel := context.WithTimeout(ctx, bound)
		begin := time.Now()
		l, err := clients[0].Lock(lctx, key)
		cancel()
		if err != nil {
			sm.violate(vLiveness, key, "no grant within %v of healing and releasing: %s", bound, short(err))
			continue
		}
		sm.logf("sim", key, "liveness: granted after %v", time.Since(begin))
		g := sm.granted("waiter", "Lock", l)
		sm.ended(g)
		l.Unlock(ctx)
	}
	for _, c := range clients {
		c.Close()
	}
	// Background work (releases of failed attempts and of late SETs) is
	// bounded by the node timeout (a late SET's reply, then its release);
	// after that no goroutine may be left, which synctest checks as the
	// root returns.
	time.Sleep(3 * s.nodeTimeout)
}

// bubbleOf returns the "synctest bubble N" of the calling goroutine, from its
// stack trace's header.
func bubbleOf() string {
	buf := make([]byte, 512)
	buf = buf[:runtime.Stack(buf, false)]
	header, _, _ := strings.Cut(string(buf), "\n")
	if i := strings.Index(header, "synctest bubble "); i >= 0 {
		return strings.TrimSuffix(header[i:], "]:")
	}
	return ""
}

// leftovers describes the goroutines still parked in the schedule's bubble
// after synctest found them left over: the first frames of each.
func (sm *sim) leftovers() string {
	if sm.bubble == "" {
		return ""
	}
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var b strings.Builder
	shown := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, frames, _ := strings.Cut(g, "\n")
		if !strings.Contains(header, sm.bubble+"]") || strings.Contains(g, "testing.tRunner") || strings.Contains(g, "synctest.Run") {
			continue
		}
		if shown++; shown > 5 {
			continue
		}
		fmt.Fprintf(&b, "\n    %s", header)
		for i, line := range strings.Split(frames, "\n") {
			if i >= 12 {
				break
			}
			if i%2 == 0 {
				fmt.Fprintf(&b, "\n      %s", line)
			}
		}
	}
	if shown > 5 {
		fmt.Fprintf(&b, "\n    ... and %d more", shown-5)
	}
	return b.String()
}

func (sm *sim) recoverPanic(who string) {
	if p := recover(); p != nil {
		sm.violate(vPanic, "", "%s: %v\n%s", who, p, debug.Stack())
	}
}

// keep records a granted Lock, for the final release.
func (sm *sim) keep(g *simGrant, l *redlock.Lock) {
	sm.mu.Lock()
	sm.held = append(sm.held, heldLock{g, l})
	sm.mu.Unlock()
}

// backoff is ExponentialBackoff from backoffMin to backoffMax, drawn from the
// schedule's stream so that it follows from the seed.
func (s *schedule) backoff(stream uint64) redlock.Backoff {
	var mu sync.Mutex
	r := s.rng(stream)
	return func(attempt int) time.Duration {
		w := s.backoffMin
		for i := 1; i < attempt && w < s.backoffMax; i++ {
			w *= 2
		}
		w = min(w, s.backoffMax)
		mu.Lock()
		defer mu.Unlock()
		return w/2 + drawDur(r, 0, w/2+1)
	}
}
