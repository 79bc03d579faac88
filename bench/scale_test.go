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
		locks = 20000
		runs  = 3
		// The bound allows for the collector and the heap's page
		// granularity, which 20,000 locks spread thin (at 5,000, single
		// runs ranged from -179 to 92 B, and a median of -90 B failed a
		// CI run with a bound of 90). At 20,000 the medians of four
		// -count runs came out at -37 to -46 B (single runs -70 to -9 B;
		// so the measure reads about 40 B low), with -race and without;
		// the old baseline came out 143-169 B high, or 431 B low.
		bound = 100
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
	t.Logf("bytes per held lock of a Doer that holds nothing, %d runs: %.0f", runs, bytes)
	if median := bytes[len(bytes)/2]; median < -bound || median > bound {
		t.Errorf("a Doer that holds nothing measured %.0f B per held lock (median of %v), want within ±%d B: the baseline is not fn's goroutine without Do",
			median, bytes, bound)
	}
}
