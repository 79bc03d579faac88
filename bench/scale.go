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
//	               all are held, less those of N parked goroutines, over N
//	cpu-ns/lock-s  CPU time of the process during the hold, per held lock per second
//	acquire-ns     from the first Do call to the last fn started
//	release-ns     from the end of the hold to the return of the last Do
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

// parkedBaseline returns the memory that n goroutines parked on a channel
// take: what fn's goroutines cost by themselves.
func parkedBaseline(n int) int64 {
	before := memInUse()
	var started, ended sync.WaitGroup
	release := make(chan struct{})
	started.Add(n)
	for range n {
		ended.Go(func() {
			started.Done()
			<-release
		})
	}
	started.Wait()
	during := memInUse()
	close(release)
	ended.Wait()
	return during - before
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
	baseline := parkedBaseline(n)
	heap0, stack0 := memSplit()
	if path := os.Getenv(ScaleHeapProfileEnv); path != "" {
		writeHeapProfile(b, path+".start")
	}

	r := scaleResult{locks: int64(n)}
	var (
		held, lost, errs, settled atomic.Int64
		errOnce                   sync.Once
		wg                        sync.WaitGroup
		allSettled                = make(chan struct{}) // every call holds its lock or has failed
		release                   = make(chan struct{}) // the hold is over
	)
	settle := func() {
		if settled.Add(1) == int64(n) {
			close(allSettled)
		}
	}
	b.ResetTimer()
	before := memInUse()
	start := time.Now()
	for _, key := range keys {
		wg.Go(func() {
			entered := false
			err := d.Do(ctx, key, func(fctx context.Context) error {
				entered = true
				held.Add(1)
				settle()
				select {
				case <-release:
					if fctx.Err() != nil {
						lost.Add(1) // lost during the hold, noticed at its end
					}
				case <-fctx.Done():
					if errors.Is(context.Cause(fctx), redlock.ErrLockLost) {
						lost.Add(1)
					}
					<-release
				}
				return nil
			})
			if !entered {
				settle()
			}
			if err != nil {
				errs.Add(1)
				errOnce.Do(func() { r.firstErr = err })
			}
		})
	}
	select {
	case <-allSettled:
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
	close(release)
	wg.Wait()
	r.release = time.Since(end)
	b.StopTimer()

	r.held, r.lost, r.errs = held.Load(), lost.Load(), errs.Load()
	r.bytesPerLock = float64(inUse-before-baseline) / float64(n)
	b.Logf("per held lock: heap %d B, stacks %d B, less %d B for a parked goroutine; %d goroutines for %d locks",
		(heap1-heap0)/int64(n), (stack1-stack0)/int64(n), baseline/int64(n), goroutines, n)
	if cpuOK && r.held > 0 {
		r.cpuPerLockSec = float64(cpu1-cpu0) / (float64(r.held) * heldFor.Seconds())
	}
	return r
}
