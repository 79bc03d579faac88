package benchrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-redlock/redlock/bench"
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

// redisDrivers returns the Redis drivers (those with a floor) that have a
// result in caseParams.
func (r *Report) redisDrivers(caseParams string) []string {
	var drivers []string
	for _, c := range clients {
		if r.find(caseParams, KindDriver, c) != nil {
			drivers = append(drivers, c)
		}
	}
	return drivers
}

// targetList builds a list of targets, each checked for every driver.
type targetList struct {
	drivers []string
	ts      []Target
}

// add checks one target for every driver: check returns whether the driver
// meets it, whether there are figures to judge by, and the figures.
func (l *targetList) add(name string, check func(d string) (ok, have bool, fig string)) {
	t := Target{Name: name, Met: true}
	var figs []string
	for _, d := range l.drivers {
		ok, have, fig := check(d)
		if !have {
			continue
		}
		t.Met = t.Met && ok
		figs = append(figs, fig)
	}
	if len(figs) > 0 {
		t.Figures = strings.Join(figs, "; ")
		l.ts = append(l.ts, t)
	}
}

// ScaleTargets checks the targets of performance at scale (many locks held,
// lone calls, hand-off, far nodes) on the report's medians, for the Redis drivers. A target with no figures in the
// report is left out.
func (r *Report) ScaleTargets() []Target {
	var drivers []string
	seen := make(map[string]bool)
	for _, res := range r.Results {
		if res.Kind == KindDriver && slices.Contains(clients, res.Contender) && !seen[res.Contender] {
			seen[res.Contender] = true
		}
	}
	for _, c := range clients {
		if seen[c] {
			drivers = append(drivers, c)
		}
	}
	l := targetList{drivers: drivers}
	scale := func(d string) *Result {
		for _, res := range r.Results {
			if res.Case == "Scale" && res.Kind == KindDriver && res.Contender == d {
				return res
			}
		}
		return nil
	}
	// A hold of fewer than three extension periods (a short -scale-for)
	// has not tried what the target asks: it is not met, and says why.
	hold, periods := r.scaleHold()
	name := "Scale: every lock acquired within 5s, 0 lost over three extension periods, 0 Do errors"
	if periods < 3 {
		name += fmt.Sprintf(" (not judged: the locks were held %v, %s)", hold, periodsText(periods))
	}
	l.add(name, func(d string) (bool, bool, string) {
		res := scale(d)
		if res == nil {
			return false, false, ""
		}
		m := res.Median
		locks := strings.TrimPrefix(res.Params[strings.LastIndex(res.Params, "/")+1:], "locks=")
		ok := periods >= 3 && fmt.Sprint(m[Held]) == locks && m[Lost] == 0 && m[Errors] == 0 && m[AcquireNs] <= 5e9
		return ok, true, fmt.Sprintf("%s %s of %s held in %s, %s lost, %s errors", d, formatCount0(m[Held]), locks,
			formatNs(m[AcquireNs]), formatCount0(m[Lost]), formatCount0(m[Errors]))
	})
	l.add("Scale: ≤ 2 KB per held lock beyond fn's goroutine (CPU per held lock-second shown)", func(d string) (bool, bool, string) {
		res := scale(d)
		if res == nil {
			return false, false, ""
		}
		m := res.Median
		return m[BytesPerLock] <= 2048, true, fmt.Sprintf("%s %s B, CPU %s per lock-second", d, formatCount0(m[BytesPerLock]), formatNs(m[CPUPerLockSec]))
	})
	for _, nodes := range []string{"1", "3"} {
		cp := "Lock/nodes=" + nodes + "/lockers=1"
		l.add("lone call, "+nodes+" node(s), 1 caller: driver ≥ 0.95× the speed (p50) of its client's SET NX PX + EVALSHA release by hand", func(d string) (bool, bool, string) {
			if lone := r.find("Lone/nodes="+nodes+"/lockers=1", KindDriver, d); lone != nil && lone.Median[XFloor] > 0 {
				m := lone.Median
				return m[XFloor] >= 0.95, true, fmt.Sprintf("%s %.2f× (%s vs %s, in turn)", d, m[XFloor], formatNs(m[P50]), formatNs(m[FloorP50]))
			}
			drv, fl := r.find(cp, KindDriver, d), r.find(cp, KindFloor, d)
			if drv == nil || fl == nil || drv.Median[P50] == 0 {
				return false, false, ""
			}
			v := fl.Median[P50] / drv.Median[P50]
			fig := fmt.Sprintf("%s %.2f× (%s vs %s", d, v, formatNs(drv.Median[P50]), formatNs(fl.Median[P50]))
			if del := r.find(cp, KindDelFloor, d); del != nil && del.Median[P50] > 0 {
				fig += fmt.Sprintf("; %.2f× the DEL floor", del.Median[P50]/drv.Median[P50])
			}
			return v >= 0.95, true, fig + ")"
		})
	}
	handoff := func(params, name string, limit float64) {
		l.add(name, func(d string) (bool, bool, string) {
			res := r.find("Handoff/"+params, KindDriver, d)
			if res == nil || res.Median[P50] == 0 {
				return false, false, ""
			}
			m := res.Median
			fig := fmt.Sprintf("%s %s", d, formatNs(m[P50]))
			if m[WaitP50] > 0 {
				fig += fmt.Sprintf(" (longest wait %.1f× the median)", m[WaitMax]/m[WaitP50])
			}
			if fl := r.find("HandoffFloor/"+params, KindDriver, d); fl != nil && fl.Median[XFloor] > 0 {
				fm := fl.Median
				fig += fmt.Sprintf(" [in turn with its client's waiting floor: %s vs %s, %.2f×]", formatNs(fm[P50]), formatNs(fm[FloorP50]), fm[XFloor])
			}
			return m[P50] <= limit, true, fig
		})
	}
	handoff("nodes=5/clients=2/lockers=2", "hand-off p50 ≤ 600 µs, 5 nodes, one waiter", 600e3)
	handoff("nodes=5/clients=8/lockers=32", "hand-off p50 < 1 ms, 5 nodes, 8 clients × 4 waiters (longest wait against the median shown)", 1e6-1)
	l.add("2 of 5 nodes 40 ms away: lock+unlock p50 within 1.1× all-near (1 locker)", func(d string) (bool, bool, string) {
		near := r.find("Lock/nodes=5/lockers=1", KindDriver, d)
		far := r.find("Far/nodes=5/far=2/lockers=1", KindDriver, d)
		if near == nil || far == nil || near.Median[P50] == 0 {
			return false, false, ""
		}
		n, f := near.Median[P50], far.Median[P50]
		fig := fmt.Sprintf("%s %s vs %s (%.2f×", d, formatNs(f), formatNs(n), f/n)
		if px := r.find("Far/nodes=5/proxied=2/lockers=1", KindDriver, d); px != nil && px.Median[P50] > 0 {
			fig += fmt.Sprintf("; %.2f× the same nodes through the proxy without delay, %s", f/px.Median[P50], formatNs(px.Median[P50]))
		}
		return f <= 1.1*n, true, fig + ")"
	})
	return l.ts
}

// peerTarget is the target that compares the drivers with a peer: a run
// without the peers (Config.NoPeers) has no figures for it.
const peerTarget = "every driver ≥ redsync over the same client in throughput; goredis ≥ 1.5× redsync-goredis"

// Targets checks the throughput, allocation and stall targets on the
// report's medians, for the Redis drivers (those with a floor). A target with no figures in the report
// (its case was not run) is left out.
func (r *Report) Targets() []Target {
	l := targetList{drivers: r.redisDrivers(Headline)}
	add := l.add
	ops := func(kind Kind, name string) (float64, bool) {
		res := r.find(Headline, kind, name)
		if res == nil || res.Median[OpsPerSec] == 0 {
			return 0, false
		}
		return res.Median[OpsPerSec], true
	}

	// The floor is SET NX PX then DEL; the floor the tables divide by
	// releases with the drivers' script, which costs the client more. The
	// target holds against both, when the DEL floor ran.
	add("every driver ≥ 0.85× its client's floor in throughput (the DEL floor's too)", func(d string) (bool, bool, string) {
		v, ok1 := ops(KindDriver, d)
		f, ok2 := ops(KindFloor, d)
		if !ok1 || !ok2 {
			return false, false, ""
		}
		ok, fig := v/f >= 0.85, fmt.Sprintf("%s %.2f×", d, v/f)
		if del, ok3 := ops(KindDelFloor, d); ok3 {
			ok = ok && v/del >= 0.85
			fig += fmt.Sprintf(" (%.2f× the DEL floor)", v/del)
		}
		return ok, true, fig
	})
	add(peerTarget, func(d string) (bool, bool, string) {
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
	add("≤ 40 allocations per lock+unlock on five nodes with the rueidis driver (every driver shown)", func(d string) (bool, bool, string) {
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
	return l.ts
}

// scaleHold returns how long the Scale case held its locks (the report's
// -scale-for; 0 is the default) and how many extension periods of the
// suite's TTL (an extension every TTL/3) that spans.
func (r *Report) scaleHold() (time.Duration, int) {
	hold := r.Config.ScaleFor
	if hold <= 0 {
		hold = bench.DefaultScaleFor
	}
	return hold, int(hold / (bench.TTL / 3))
}

// periodsText says n extension periods in words: "no extension period",
// "one extension period", "three extension periods", "12 extension periods".
func periodsText(n int) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	count := strconv.Itoa(n)
	if n >= 0 && n < len(words) {
		count = words[n]
	}
	if n == 0 || n == 1 {
		return count + " extension period"
	}
	return count + " extension periods"
}
