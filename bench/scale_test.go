package bench

import (
	"slices"
	"testing"
	"time"
)

// TestScaleMeasuresBareDoerAsNothing checks the Scale case's measure of the
// memory per held lock against a Doer that holds no lock and adds nothing to
// fn's goroutine (bareDoer, which the baseline uses): the median of three
// runs must come out at about nothing. With a baseline of goroutines parked
// on a bare channel receive, which had neither fn's frames nor its select, it
// came out at 120-141 B; and measured on goroutines whose descriptors the
// runtime made then (holdMany's reuse them), it subtracted what holdMany's
// goroutines did not take.
func TestScaleMeasuresBareDoerAsNothing(t *testing.T) {
	const (
		locks = 5000
		runs  = 3
		// The bound allows for the collector: a goroutine whose fn's wait
		// runs into the allocator's slow path grows its stack (2 KB more),
		// in the baseline's runs as in the measured one, a few in a
		// hundred; single runs measured -88 to 5 B.
		bound = 90
	)
	var rs []scaleResult
	testing.Benchmark(func(b *testing.B) {
		for len(rs) < runs {
			rs = append(rs, holdMany(b, bareDoer{}, locks, time.Millisecond))
		}
	})
	var bytes []float64
	for _, r := range rs {
		if r.held != locks || r.errs != 0 {
			t.Fatalf("held %d of %d, %d errors (%v)", r.held, locks, r.errs, r.firstErr)
		}
		bytes = append(bytes, r.bytesPerLock)
	}
	slices.Sort(bytes)
	if median := bytes[len(bytes)/2]; median < -bound || median > bound {
		t.Errorf("a Doer that holds nothing measured %.0f B per held lock (median of %v), want within ±%d B: the baseline is not fn's goroutine without Do",
			median, bytes, bound)
	}
}
