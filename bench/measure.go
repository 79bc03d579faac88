package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
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
// error; apart from them, it counts the Unlocks whose release was only
// slower than the node timeout (see addUnlock). It is safe for concurrent
// use.
type failures struct {
	n     atomic.Int64
	once  sync.Once
	first error

	slow      atomic.Int64
	slowOnce  sync.Once
	firstSlow error
}

// add counts err if it is not nil.
func (f *failures) add(err error) {
	if err == nil {
		return
	}
	f.n.Add(1)
	f.once.Do(func() { f.first = err })
}

// addUnlock counts err, an Unlock's, if it is not nil: as a slow release
// when it says only that nodes answered after the node timeout (see
// slowRelease), else as a failure.
func (f *failures) addUnlock(err error) {
	if !slowRelease(err) {
		f.add(err)
		return
	}
	f.slow.Add(1)
	f.slowOnce.Do(func() { f.firstSlow = err })
}

// slowRelease reports whether err, an Unlock's error, says only that nodes
// were slower than the node timeout: some timed out, and no more refused
// than the nodes outside a quorum, so that a quorum could have confirmed
// the release had they answered in time. A lock found lost (refused by a
// quorum) or any other error is not slow.
func slowRelease(err error) bool {
	var ve *redlock.VoteError
	return errors.As(err, &ve) && ve.Failed > 0 && ve.Refused <= ve.Nodes-ve.Needed &&
		errors.Is(err, context.DeadlineExceeded)
}

// check reports the failures of b.N operations as failed/op, logs the first,
// and fails b when more than a tenth failed. It reports the slow releases
// as slow-unlocks/op and logs the first; it fails b when there were more
// than a tenth of b.N of them, and more than one. A release slower than the
// node timeout is the machine's load, not a lock lost: at a load average of
// 25 to 33 on two cores, under -race, 3 of 20 runs of
// BenchmarkHandoffSteps/valkeygo -benchtime 1x (b.N is 1, as in
// CheckBenchmarks) failed on one such Unlock, once the holder's release in
// a hand-off to 31 waiters, which its notice wakes at once, answered in
// 240ms (the node timeout is 200ms). Two or more in a run of one hand-off
// still fail it, as releases that never answer would.
func (f *failures) check(b *testing.B) {
	b.Helper()
	if slow := f.slow.Load(); slow > 0 {
		if slow > 1 && slow*10 > int64(b.N) {
			b.Fatalf("%d of %d Unlocks were slower than the node timeout; the first: %v", slow, b.N, f.firstSlow)
		}
		b.Logf("%d of %d Unlocks were slower than the node timeout; the first: %v", slow, b.N, f.firstSlow)
		b.ReportMetric(float64(slow)/float64(b.N), "slow-unlocks/op")
	}
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
