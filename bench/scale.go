package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// The environment variables that size the Scale case.
const (
	// ScaleLocksEnv gives the number of locks the Scale case holds at once
	// (default DefaultScaleLocks).
	ScaleLocksEnv = "REDLOCK_BENCH_SCALE_LOCKS"
	// ScaleForEnv gives how long the Scale case holds them, as a Go duration
	// (default DefaultScaleFor).
	ScaleForEnv = "REDLOCK_BENCH_SCALE_FOR"
	// ScaleHeapProfileEnv, when set, names a file to which the Scale case
	// writes a heap profile (pprof) taken while all its locks are held, at
	// the end of the hold, and to that name with ".start" added one taken
	// before the first Do: pprof's -base gives what the held locks keep.
	ScaleHeapProfileEnv = "REDLOCK_BENCH_SCALE_HEAPPROFILE"
	// ScaleFarAwayEnv gives how many of the ScaleFar case's five nodes are
	// far, 1 to 5 (default 2, as in the Far case): with 3 or more, a quorum
	// needs far nodes, and every extension and release waits for them.
	ScaleFarAwayEnv = "REDLOCK_BENCH_SCALE_FAR_AWAY"
)

const (
	// DefaultScaleLocks is how many locks the Scale case holds at once.
	DefaultScaleLocks = 20000
	// DefaultScaleFor is how long the Scale case holds them: three extension
	// periods of the default TTL (an extension every TTL/3), and a second.
	DefaultScaleFor = TTL + time.Second
	// scaleNodes is the number of nodes of the Scale case.
	scaleNodes = 5
	// scaleWarmLockers is how many goroutines warm the Locker up.
	scaleWarmLockers = 64
)

// scaleConfig reads the size of the Scale case from the environment.
func scaleConfig(b *testing.B) (locks int, hold time.Duration) {
	locks, hold = DefaultScaleLocks, DefaultScaleFor
	if v := os.Getenv(ScaleLocksEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("bench: %s=%q is not a positive number", ScaleLocksEnv, v)
		}
		locks = n
	}
	if v := os.Getenv(ScaleForEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("bench: %s=%q is not a positive duration", ScaleForEnv, v)
		}
		hold = d
	}
	return locks, hold
}

// Scale benchmarks many locks held at once through Do by one Locker (a Doer):
// N concurrent Do calls on five nodes, each on a key of its own, whose fn
// waits until all N hold their lock, and then for the hold time (by default
// 11s: three extension periods of the default TTL), before returning. One
// operation is the whole run; its metrics are:
//
//	held           locks that were acquired (fn ran)
//	lost           locks lost while held (fn's context canceled before the end)
//	errors         Do calls that returned an error (not acquired, lost, or not released by a quorum)
//	B/lock         memory per held lock beyond fn's goroutine: heap and stacks in use while
//	               all are held, less those of the same N goroutines while their fn waits
//	               when each calls fn directly rather than through Do, over N
//	cpu-ns/lock-s  CPU time of the process during the hold, per held lock per second
//	acquire-ns     from the first Do call to the last fn started
//	release-ns     from the end of the hold to the return of the last Do
//
// B/lock depends on how deep fn's goroutine is when fn waits: Do puts about
// 190 bytes of frames beneath fn (its own and its arguments' spill in the
// caller's), and a goroutine whose wait then runs out of its 2 KB stack
// (a receive or select that allocates a sudog runs 300 to 700 bytes of the
// allocator's frames) doubles its stack for as long as it holds the lock.
// fn waits here at about 580 bytes of stack (420 without Do), where few do;
// with 176 bytes more of the caller's frames beneath Do, most goroutines
// doubled their stack in a hand run, and B/lock was about 2 KB higher.
//
// N and the hold time come from ScaleLocksEnv and ScaleForEnv (defaults 20,000
// and 11s). Sub-benchmark: nodes=5/locks=N. Contenders whose Locker is not a
// Doer skip it.
func Scale(b *testing.B, c Contender) {
	b.Helper()
	locks, _ := scaleConfig(b)
	scale(b, c, Servers(b, scaleNodes), fmt.Sprintf("nodes=%d/locks=%d", scaleNodes, locks))
}

// ScaleFar is Scale with two of the five nodes 40ms away (ScaleFarAwayEnv
// sets how many), behind the Far case's delay proxy: the extensions of N held
// locks must keep up with nodes that answer a round trip later, whose calls
// the Client queues. Its metrics are Scale's (B/lock then includes the far
// nodes' calls in flight). Sub-benchmark: nodes=5/far=F/locks=N. The runner
// leaves it out; run it with go test -bench ScaleFar.
func ScaleFar(b *testing.B, c Contender) {
	b.Helper()
	locks, _ := scaleConfig(b)
	away := farAway
	if v := os.Getenv(ScaleFarAwayEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > farNodes {
			b.Fatalf("bench: %s=%q is not a number from 1 to %d", ScaleFarAwayEnv, v, farNodes)
		}
		away = n
	}
	servers := Servers(b, farNodes)
	addrs := slices.Clone(servers)
	for i := farNodes - away; i < farNodes; i++ {
		p, err := newDelayProxy(servers[i], farRoundTrip/2)
		if err != nil {
			b.Fatalf("delay proxy: %v", err)
		}
		b.Cleanup(func() { p.Close() })
		addrs[i] = p.Addr()
	}
	scale(b, c, addrs, fmt.Sprintf("nodes=%d/far=%d/locks=%d", farNodes, away, locks))
}

// scale runs the Scale case on addrs as sub-benchmark name.
func scale(b *testing.B, c Contender, addrs []string, name string) {
	b.Helper()
	locks, hold := scaleConfig(b)
	withLocker(b, c, addrs, name, scaleWarmLockers, nil, func(b *testing.B, lk Locker) {
		d, ok := lk.(Doer)
		if !ok {
			b.Skipf("%s does not hold locks through Do", c.Name)
		}
		var r scaleResult
		for range b.N {
			r = holdMany(b, d, locks, hold)
		}
		r.report(b)
	})
}

// scaleResult is the outcome of one run of the Scale case.
type scaleResult struct {
	locks, held, lost, errs int64
	firstErr                error
	bytesPerLock            float64
	cpuPerLockSec           float64 // ns; 0 when the process's CPU time is unknown
	acquire, release        time.Duration
}

func (r scaleResult) report(b *testing.B) {
	b.ReportAllocs()
	b.ReportMetric(float64(r.held), "held")
	b.ReportMetric(float64(r.lost), "lost")
	b.ReportMetric(float64(r.errs), "errors")
	b.ReportMetric(r.bytesPerLock, "B/lock")
	if r.cpuPerLockSec > 0 {
		b.ReportMetric(r.cpuPerLockSec, "cpu-ns/lock-s")
	}
	b.ReportMetric(float64(r.acquire), "acquire-ns")
	b.ReportMetric(float64(r.release), "release-ns")
	if r.errs > 0 {
		b.Logf("%d of %d Do calls failed; the first: %v", r.errs, r.locks, r.firstErr)
	}
}

// memInUse returns the heap and stack memory in use after two collections
// (the second shrinks the stacks that the first found mostly unused).
func memInUse() int64 {
	heap, stack := memSplit()
	return heap + stack
}

// memSplit returns the heap and the stack memory in use after two
// collections.
func memSplit() (heap, stack int64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// A bareDoer runs fn at once on the caller's goroutine, with the caller's
// context, and holds no lock: the Scale case's baseline, fn's goroutine
// without Do beneath it.
type bareDoer struct{}

func (bareDoer) Do(ctx context.Context, _ string, fn func(ctx context.Context) error) error {
	return fn(ctx)
}

// fnBaseline returns the memory that n of the Scale case's goroutines take
// while their fn waits, each calling fn directly (bareDoer) rather than
// through Do: what fn's goroutines cost by themselves, their frames beneath
// fn and fn's own wait included. It runs them twice and measures the second
// time, when the goroutines reuse the runtime's descriptors (g) of the first,
// as holdMany's then reuse those of the second: a descriptor, once made, is
// never freed, so that measuring the first time would count in the baseline
// what holdMany's goroutines do not take, and subtract it from the locks'
// cost.
func fnBaseline(ctx context.Context, n int) (heap, stack int64) {
	keys := make([]string, n)
	for range 2 {
		h := newHolders(n)
		heap0, stack0 := memSplit()
		h.start(ctx, bareDoer{}, keys)
		<-h.allSettled
		heap1, stack1 := memSplit()
		heap, stack = heap1-heap0, stack1-stack0
		close(h.release)
		h.wg.Wait()
	}
	return heap, stack
}

// holders are the Scale case's n goroutines, each in a Do call whose fn
// waits until release is closed.
type holders struct {
	n                         int64
	held, lost, errs, settled atomic.Int64
	errOnce                   sync.Once
	firstErr                  error // the first Do error, set once by errOnce
	wg                        sync.WaitGroup
	allSettled                chan struct{} // every call holds its lock or has failed
	release                   chan struct{} // the hold is over
}

func newHolders(n int) *holders {
	return &holders{n: int64(n), allSettled: make(chan struct{}), release: make(chan struct{})}
}

// start starts a goroutine per key, which holds its lock through d.
func (h *holders) start(ctx context.Context, d Doer, keys []string) {
	for _, key := range keys {
		h.wg.Go(func() { h.hold(ctx, d, key) })
	}
}

func (h *holders) settle() {
	if h.settled.Add(1) == h.n {
		close(h.allSettled)
	}
}

// hold holds key's lock through d until release is closed.
func (h *holders) hold(ctx context.Context, d Doer, key string) {
	entered := false
	err := d.Do(ctx, key, func(fctx context.Context) error {
		entered = true
		h.held.Add(1)
		h.settle()
		select {
		case <-h.release:
			if fctx.Err() != nil {
				h.lost.Add(1) // lost during the hold, noticed at its end
			}
		case <-fctx.Done():
			if errors.Is(context.Cause(fctx), redlock.ErrLockLost) {
				h.lost.Add(1)
			}
			<-h.release
		}
		return nil
	})
	if !entered {
		h.settle()
	}
	if err != nil {
		h.errs.Add(1)
		h.errOnce.Do(func() { h.firstErr = err })
	}
}

// writeHeapProfile writes a heap profile of the objects in use at the last
// collection to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Errorf("bench: %s: %v", ScaleHeapProfileEnv, err)
		return
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Errorf("bench: %s: %v", ScaleHeapProfileEnv, err)
	}
	if err := f.Close(); err != nil {
		b.Errorf("bench: %s: %v", ScaleHeapProfileEnv, err)
	}
}

// holdMany runs one Held operation: n Do calls held for hold.
func holdMany(b *testing.B, d Doer, n int, hold time.Duration) scaleResult {
	ctx, cancel := runContext(b)
	defer cancel()
	keys := newKeys("held", n)
	baseHeap, baseStack := fnBaseline(ctx, n)
	baseline := baseHeap + baseStack
	heap0, stack0 := memSplit()
	if path := os.Getenv(ScaleHeapProfileEnv); path != "" {
		writeHeapProfile(b, path+".start")
	}

	r := scaleResult{locks: int64(n)}
	h := newHolders(n)
	b.ResetTimer()
	before := memInUse()
	start := time.Now()
	h.start(ctx, d, keys)
	select {
	case <-h.allSettled:
	case <-ctx.Done():
	}
	r.acquire = time.Since(start)
	cpu0, cpuOK := processCPU()
	t0 := time.Now()
	select {
	case <-time.After(hold):
	case <-ctx.Done():
	}
	cpu1, _ := processCPU()
	heldFor := time.Since(t0)
	heap1, stack1 := memSplit()
	goroutines := runtime.NumGoroutine()
	if path := os.Getenv(ScaleHeapProfileEnv); path != "" {
		writeHeapProfile(b, path)
	}
	inUse := heap1 + stack1
	end := time.Now()
	close(h.release)
	h.wg.Wait()
	r.release = time.Since(end)
	b.StopTimer()

	r.held, r.lost, r.errs, r.firstErr = h.held.Load(), h.lost.Load(), h.errs.Load(), h.firstErr
	r.bytesPerLock = float64(inUse-before-baseline) / float64(n)
	b.Logf("per held lock: heap %d B, stacks %d B, less fn's goroutine without Do: heap %d B, stacks %d B; %d goroutines for %d locks",
		(heap1-heap0)/int64(n), (stack1-stack0)/int64(n), baseHeap/int64(n), baseStack/int64(n), goroutines, n)
	if cpuOK && r.held > 0 {
		r.cpuPerLockSec = float64(cpu1-cpu0) / (float64(r.held) * heldFor.Seconds())
	}
	return r
}
