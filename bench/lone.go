package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// loneNodes are the node counts of the Lone case.
var loneNodes = []int{1, 3}

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
// is as fast). B/op and allocs/op, with -benchmem, count the operations of
// both. Sub-benchmarks: nodes=1,3/lockers=1.
func Lone(b *testing.B, c, floor Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(loneNodes))
	for _, nodes := range loneNodes {
		if !c.supports(nodes) || !floor.supports(nodes) {
			continue
		}
		drv, fl := openWarm(b, c, addrs[:nodes]), openWarm(b, floor, addrs[:nodes])
		b.Run(fmt.Sprintf("nodes=%d/lockers=1", nodes), func(b *testing.B) { lone(b, drv, fl) })
	}
}

// openWarm opens c over addrs and warms it up for one locker; it is closed
// when b ends.
func openWarm(b *testing.B, c Contender, addrs []string) Locker {
	b.Helper()
	lk, err := c.Open(addrs)
	if err != nil {
		b.Fatalf("%s: Open: %v", c.Name, err)
	}
	b.Cleanup(func() {
		if err := lk.Close(); err != nil {
			b.Errorf("%s: Close: %v", c.Name, err)
		}
	})
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	if err := warmUp(ctx, lk, 1); err != nil {
		b.Fatalf("%s: %v", c.Name, err)
	}
	return lk
}

// lone runs b.N operations of drv and of fl in turn and reports Lone's
// metrics.
func lone(b *testing.B, drv, fl Locker) {
	ctx, cancel := runContext(b)
	defer cancel()
	keys := newKeys("lone", 2)
	lat, flLat := make([]int64, b.N), make([]int64, b.N)
	var (
		f     failures
		total int64
	)
	timed := func(lk Locker, key string) int64 {
		t0 := time.Now()
		f.add(lockUnlock(ctx, lk, key))
		return int64(time.Since(t0))
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			lat[i] = timed(drv, keys[0])
			flLat[i] = timed(fl, keys[1])
		} else {
			flLat[i] = timed(fl, keys[1])
			lat[i] = timed(drv, keys[0])
		}
		total += lat[i]
	}
	b.StopTimer()
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
