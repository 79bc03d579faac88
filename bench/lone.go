package bench

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// loneNodes are the node counts of the Lone case.
var loneNodes = []int{1, 3}

// LoneGapEnv gives, as a Go duration, an idle time before each operation of
// the Lone case, untimed (default none): a caller that is alone between its
// calls, whose process sleeps meanwhile, rather than one that calls again at
// once.
const LoneGapEnv = "REDLOCK_BENCH_LONE_GAP"

// Lone benchmarks lock+unlock by one caller with c against floor, its
// client's floor (see Floors), on the same servers: one operation of each in
// turn, the one that goes first alternating, each on a key of its own. Both
// meet the machine in the same state from moment to moment: the ratio of two
// runs made one after the other moves with the machine (on a shared 2-core
// machine the p50 of the same run at one node moved between 53 and 180 µs
// from run to run), the ratio of operations made in turn does not.
//
// It reports the driver's figures: ops/s and ns/op over its own operations'
// time, p50-ns, p99-ns and max-ns; and floor-p50-ns, the floor's p50, and
// x-floor, the floor's p50 over the driver's: the driver's speed as a share
// of its client's doing the same commands by hand (1 or more when the driver
// is as fast). With LoneGapEnv, each operation follows an idle time.
// failed/op counts the driver's failed operations; the run fails
// when more than a tenth of either's failed. B/op and allocs/op, with
// -benchmem, count the operations of both. Sub-benchmarks:
// nodes=1,3/lockers=1.
func Lone(b *testing.B, c, floor Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(loneNodes))
	for _, nodes := range loneNodes {
		if !c.supports(nodes) || !floor.supports(nodes) {
			continue
		}
		var drv, fl Locker // opened by the first run, closed when b ends
		b.Run(fmt.Sprintf("nodes=%d/lockers=1", nodes), func(sb *testing.B) {
			if drv == nil {
				drv = openWarm(sb, c, addrs[:nodes], 1)
				b.Cleanup(func() { closeLocker(b, c, drv) })
			}
			if fl == nil {
				fl = openWarm(sb, floor, addrs[:nodes], 1)
				b.Cleanup(func() { closeLocker(b, floor, fl) })
			}
			lone(sb, drv, fl)
		})
	}
}

// closeLocker closes lk, c's, failing b if it cannot.
func closeLocker(b *testing.B, c Contender, lk Locker) {
	if err := lk.Close(); err != nil {
		b.Errorf("%s: Close: %v", c.Name, err)
	}
}

// lone runs b.N operations of drv and of fl in turn and reports Lone's
// metrics.
func lone(b *testing.B, drv, fl Locker) {
	ctx, cancel := runContext(b)
	defer cancel()
	keys := newKeys("lone", 2)
	lat, flLat := make([]int64, b.N), make([]int64, b.N)
	var (
		f, ff failures // the driver's, the floor's
		total int64
	)
	gap, err := time.ParseDuration(cmp.Or(os.Getenv(LoneGapEnv), "0s"))
	if err != nil || gap < 0 {
		b.Fatalf("%s=%q: want a duration of 0 or more", LoneGapEnv, os.Getenv(LoneGapEnv))
	}
	timed := func(lk Locker, key string, f *failures) int64 {
		if gap > 0 {
			time.Sleep(gap)
		}
		t0 := time.Now()
		f.add(lockUnlock(ctx, lk, key))
		return int64(time.Since(t0))
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			lat[i] = timed(drv, keys[0], &f)
			flLat[i] = timed(fl, keys[1], &ff)
		} else {
			flLat[i] = timed(fl, keys[1], &ff)
			lat[i] = timed(drv, keys[0], &f)
		}
		total += lat[i]
	}
	b.StopTimer()
	if n := ff.n.Load(); n*10 > int64(b.N) {
		b.Fatalf("floor: %d of %d operations failed; the first: %v", n, b.N, ff.first)
	}
	f.check(b)
	slices.Sort(lat)
	slices.Sort(flLat)
	p50, flP50 := percentile(lat, 0.50), percentile(flLat, 0.50)
	b.ReportMetric(float64(total)/float64(b.N), "ns/op")
	if total > 0 {
		b.ReportMetric(float64(b.N)/time.Duration(total).Seconds(), "ops/s")
	}
	b.ReportMetric(float64(p50), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 0.99)), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
	b.ReportMetric(float64(flP50), "floor-p50-ns")
	if p50 > 0 {
		b.ReportMetric(float64(flP50)/float64(p50), "x-floor")
	}
}
