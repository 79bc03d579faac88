package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// handoffFloorChunk is how many hand-offs HandoffFloor makes with one
// contender before it turns to the other.
const handoffFloorChunk = 10

// HandoffFloor benchmarks the hand-off with one waiter (the Handoff case's
// clients=2/lockers=2: two Lockers of one locker each) by c and by floor,
// its client's waiting floor (WaitingFloors), in turn: handoffFloorChunk
// hand-offs of one, then of the other, each on a key of its own, so that both
// meet the machine in the same state. The waiting floor is the least a Redlock
// waiter can do by hand with the same client: SET NX PX on every node at
// once at each release notice, the key held at a majority. Its hand-off is
// the machine's floor for the hand-off: on a quiet 2-core machine whose idle
// cores are slow to wake, a round trip after a 10ms idle costs ten times or
// more a round trip made at once (see Idle; under load, both are slower and
// closer), and the Handoff case starts every hand-off after such an idle (the
// holder's hold), whatever the library.
//
// It reports the driver's hand-off figures, as Handoff does (p50-ns, p99-ns,
// max-ns, wait-p50-ns, wait-max-ns), and floor-p50-ns, the floor's hand-off
// p50, and x-floor, the floor's p50 over the driver's (1 or more when the
// driver hands off as fast as its client can by hand). ns/op and ops/s are
// the driver's hand-offs alone, with their holds, as Handoff's. Sub-benchmarks:
// nodes=1,5/clients=2/lockers=2.
func HandoffFloor(b *testing.B, c, floor Contender) {
	b.Helper()
	addrs := Servers(b, slices.Max(handoffNodes))
	for _, nodes := range handoffNodes {
		if !c.supports(nodes) || !floor.supports(nodes) {
			continue
		}
		var drv, fl []Locker // opened by the first run, closed when b ends
		b.Run(fmt.Sprintf("nodes=%d/clients=2/lockers=2", nodes), func(sb *testing.B) {
			if drv == nil {
				drv = []Locker{openWarm(sb, c, addrs[:nodes], 1), openWarm(sb, c, addrs[:nodes], 1)}
				b.Cleanup(func() { closeLocker(b, c, drv[0]); closeLocker(b, c, drv[1]) })
			}
			if fl == nil {
				fl = []Locker{openWarm(sb, floor, addrs[:nodes], 1), openWarm(sb, floor, addrs[:nodes], 1)}
				b.Cleanup(func() { closeLocker(b, floor, fl[0]); closeLocker(b, floor, fl[1]) })
			}
			handoffFloor(sb, drv, fl)
		})
	}
}

// handoffFloor runs b.N hand-offs between the two Lockers of drv and b.N
// between those of fl, in turns of handoffFloorChunk, and reports
// HandoffFloor's metrics.
func handoffFloor(b *testing.B, drv, fl []Locker) {
	ctx, cancel := runContext(b)
	defer cancel()
	keys := newKeys("handoff-floor", 2)
	var (
		lat, flLat, waits  []int64
		unlocks, flUnlocks failures
		total              time.Duration // the driver's runs
	)
	run := func(lks []Locker, key string, n int, unlocks *failures, into *[]int64, waitsInto *[]int64) {
		t0 := time.Now()
		l, w, err := handoffs(ctx, lks, 1, n, key, unlocks)
		if err != nil {
			b.Fatal(err)
		}
		*into = append(*into, l...)
		if waitsInto != nil {
			total += time.Since(t0)
			*waitsInto = append(*waitsInto, w...)
		}
	}
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		n := min(handoffFloorChunk, b.N-done)
		if turn%2 == 0 {
			run(drv, keys[0], n, &unlocks, &lat, &waits)
			run(fl, keys[1], n, &flUnlocks, &flLat, nil)
		} else {
			run(fl, keys[1], n, &flUnlocks, &flLat, nil)
			run(drv, keys[0], n, &unlocks, &lat, &waits)
		}
		done += n
	}
	b.StopTimer()
	if n := flUnlocks.n.Load(); n*10 > int64(b.N) {
		b.Fatalf("floor: %d of %d Unlocks failed; the first: %v", n, b.N, flUnlocks.first)
	}
	unlocks.check(b)
	slices.Sort(flLat)
	report(b, lat) // sorts lat
	// ns/op and ops/s of the driver's hand-offs alone, with their holds, as
	// Lone's are the driver's operations: b's clock counts the floor's too.
	b.ReportMetric(float64(total)/float64(b.N), "ns/op")
	if total > 0 {
		b.ReportMetric(float64(b.N)/total.Seconds(), "ops/s")
	}
	p50, flP50 := percentile(lat, 0.50), percentile(flLat, 0.50)
	b.ReportMetric(float64(flP50), "floor-p50-ns")
	if p50 > 0 {
		b.ReportMetric(float64(flP50)/float64(p50), "x-floor")
	}
	slices.Sort(waits)
	b.ReportMetric(float64(percentile(waits, 0.50)), "wait-p50-ns")
	b.ReportMetric(float64(waits[len(waits)-1]), "wait-max-ns")
}
