package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runTimeout bounds the context of the operations of one run of a case, so
// that a contender that hangs fails the benchmark instead of blocking it.
const runTimeout = 5 * time.Minute

// measure runs b.N calls of op, spread over lockers goroutines that take the
// next call as they finish the last one; op(g) is one operation by locker g.
// It times every call and reports the metrics of the package documentation.
// A failed operation counts, as failed/op, and the run goes on: under load a
// node timeout can expire now and then, and a benchmark should say so rather
// than stop. Only when more than a tenth of the operations fail does b fail.
func measure(b *testing.B, lockers int, op func(g int) error) {
	b.Helper()
	lat := make([]int64, b.N)
	var (
		next atomic.Int64
		f    failures
		wg   sync.WaitGroup
	)
	n := int64(b.N)
	b.ResetTimer()
	for g := range lockers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := op(g)
				lat[i] = int64(time.Since(t0))
				f.add(err)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	f.check(b)
	report(b, lat)
}

// failures counts the operations of a run that failed and keeps the first
// error. It is safe for concurrent use.
type failures struct {
	n     atomic.Int64
	once  sync.Once
	first error
}

// add counts err if it is not nil.
func (f *failures) add(err error) {
	if err == nil {
		return
	}
	f.n.Add(1)
	f.once.Do(func() { f.first = err })
}

// check reports the failures of b.N operations as failed/op, logs the first,
// and fails b when more than a tenth failed.
func (f *failures) check(b *testing.B) {
	b.Helper()
	n := f.n.Load()
	if n == 0 {
		return
	}
	if n*10 > int64(b.N) {
		b.Fatalf("%d of %d operations failed; the first: %v", n, b.N, f.first)
	}
	b.Logf("%d of %d operations failed; the first: %v", n, b.N, f.first)
	b.ReportMetric(float64(n)/float64(b.N), "failed/op")
}

// report reports ops/s and the p50, p99 and maximum of lat, in nanoseconds,
// and turns on the allocation figures.
func report(b *testing.B, lat []int64) {
	b.ReportAllocs()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(percentile(lat, 0.50)), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 0.99)), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
}

// percentile returns the nearest-rank q-quantile of sorted, which is not empty.
func percentile(sorted []int64, q float64) int64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// runContext returns the context for the operations of one run.
func runContext(b *testing.B) (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.Context(), runTimeout)
}

// newKeys returns one key per locker, fresh for this process.
func newKeys(name string, lockers int) []string {
	prefix := "bench:" + name + ":" + rand.Text()[:8] + ":"
	keys := make([]string, lockers)
	for g := range keys {
		keys[g] = prefix + strconv.Itoa(g)
	}
	return keys
}

// lockUnlock is the operation of the Lock and Stalled cases.
func lockUnlock(ctx context.Context, lk Locker, key string) error {
	h, err := lk.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("Lock: %w", err)
	}
	if err := h.Unlock(ctx); err != nil {
		return fmt.Errorf("Unlock: %w", err)
	}
	return nil
}

// warmUp runs a few lock+unlock operations on each of lockers goroutines at
// once, untimed, so that clients have dialed their connections and servers
// have loaded the scripts before the clock starts. It fails only if every
// operation failed.
func warmUp(ctx context.Context, lk Locker, lockers int) error {
	const rounds = 3
	keys := newKeys("warmup", lockers)
	var (
		f  failures
		wg sync.WaitGroup
	)
	for g := range lockers {
		wg.Go(func() {
			for range rounds {
				f.add(lockUnlock(ctx, lk, keys[g]))
			}
		})
	}
	wg.Wait()
	if f.n.Load() == int64(rounds*lockers) {
		return fmt.Errorf("warm-up: every operation failed; the first: %w", f.first)
	}
	return nil
}

// openWarm opens c over addrs and warms it up for lockers goroutines,
// failing b (with the Locker closed) if it cannot.
func openWarm(b *testing.B, c Contender, addrs []string, lockers int) Locker {
	b.Helper()
	lk, err := c.Open(addrs)
	if err != nil {
		b.Fatalf("%s: Open: %v", c.Name, err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	if err := warmUp(ctx, lk, lockers); err != nil {
		lk.Close()
		b.Fatalf("%s: %v", c.Name, err)
	}
	return lk
}

// withLocker runs body as the sub-benchmark name with a Locker that c opens
// over addrs on the first run and warms up for lockers goroutines; later runs
// (testing calls body again with a larger b.N) reuse it, and it is closed when
// the sub-benchmark ends. ready, if not nil, runs once after the warm-up, and
// the function it returns once before the Locker is closed.
func withLocker(b *testing.B, c Contender, addrs []string, name string, lockers int,
	ready func(b *testing.B) (undo func()), body func(b *testing.B, lk Locker)) {
	b.Helper()
	var (
		lk   Locker
		undo func()
	)
	b.Run(name, func(b *testing.B) {
		if lk == nil {
			lk = openWarm(b, c, addrs, lockers)
			if ready != nil {
				undo = ready(b)
			}
		}
		body(b, lk)
	})
	if undo != nil {
		undo()
	}
	if lk != nil {
		if err := lk.Close(); err != nil {
			b.Errorf("%s: Close: %v", c.Name, err)
		}
	}
}
