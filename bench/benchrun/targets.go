package benchrun

import (
	"fmt"
	"strings"
)

// A Target is one of the performance targets, checked on a report.
type Target struct {
	// Name states the target.
	Name string
	// Met says whether every figure meets it.
	Met bool
	// Figures are the measured values it was judged on.
	Figures string
}

// Targets checks the throughput, allocation, stall and hand-off targets on the report's medians, for the
// Redis drivers (those with a floor). A target with no figures in the report
// (its case was not run) is left out.
func (r *Report) Targets() []Target {
	var drivers []string
	for _, c := range clients {
		if r.find(Headline, KindDriver, c) != nil {
			drivers = append(drivers, c)
		}
	}
	var ts []Target
	add := func(name string, check func(d string) (ok, have bool, fig string)) {
		t := Target{Name: name, Met: true}
		var figs []string
		for _, d := range drivers {
			ok, have, fig := check(d)
			if !have {
				continue
			}
			t.Met = t.Met && ok
			figs = append(figs, fig)
		}
		if len(figs) > 0 {
			t.Figures = strings.Join(figs, "; ")
			ts = append(ts, t)
		}
	}
	ops := func(kind Kind, name string) (float64, bool) {
		res := r.find(Headline, kind, name)
		if res == nil || res.Median[OpsPerSec] == 0 {
			return 0, false
		}
		return res.Median[OpsPerSec], true
	}

	add("every driver ≥ 0.85× its client's floor in throughput", func(d string) (bool, bool, string) {
		v, ok1 := ops(KindDriver, d)
		f, ok2 := ops(KindFloor, d)
		if !ok1 || !ok2 {
			return false, false, ""
		}
		return v/f >= 0.85, true, fmt.Sprintf("%s %.2f×", d, v/f)
	})
	add("every driver ≥ redsync over the same client in throughput; goredis ≥ 1.5× redsync-goredis", func(d string) (bool, bool, string) {
		v, ok1 := ops(KindDriver, d)
		p, ok2 := ops(KindPeer, "redsync-"+d)
		if !ok1 || !ok2 {
			return false, false, ""
		}
		want := 1.0
		if d == "goredis" {
			want = 1.5
		}
		return v/p >= want, true, fmt.Sprintf("%s %.2f× redsync-%s", d, v/p, d)
	})
	add("≤ 40 allocations per lock+unlock on five nodes with the rueidis driver (all three shown)", func(d string) (bool, bool, string) {
		res := r.find(Headline, KindDriver, d)
		if res == nil {
			return false, false, ""
		}
		a := res.Median[AllocsPerOp]
		fig := fmt.Sprintf("%s %.0f", d, a)
		if one := r.find("Lock/nodes=5/lockers=1", KindDriver, d); one != nil {
			fig += fmt.Sprintf(" (%.0f at 1 locker)", one.Median[AllocsPerOp])
		}
		return d != "rueidis" || a <= 40, true, fig
	})
	for _, lockers := range []string{"1", "64"} {
		what := "1 locker"
		if lockers != "1" {
			what = lockers + " lockers"
		}
		add("with 2 of 5 nodes stalled, p50 lock+unlock within 2× the healthy p50 ("+what+")", func(d string) (bool, bool, string) {
			healthy := r.find("Lock/nodes=5/lockers="+lockers, KindDriver, d)
			stalled := r.find("Stalled/nodes=5/lockers="+lockers, KindDriver, d)
			if healthy == nil || stalled == nil || healthy.Median[P50] == 0 {
				return false, false, ""
			}
			h, s := healthy.Median[P50], stalled.Median[P50]
			return s <= 2*h, true, fmt.Sprintf("%s %s vs %s (%.2f×)", d, formatNs(s), formatNs(h), s/h)
		})
	}
	return ts
}
