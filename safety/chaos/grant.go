package chaos

import (
	"fmt"
	"slices"
	"time"
)

// Grant is one acquisition of the lock, as its holder saw it: the holder may
// act as the only owner from Start (when Lock returned) to End (the earlier of
// the lock's validity deadline and the moment Unlock was called). Times are
// read from one process's clock, with their monotonic readings, so that grants
// are comparable.
type Grant struct {
	// Holder names the client that held the lock, e.g. "rueidis/2".
	Holder string
	// Start is when the holder learned that it held the lock.
	Start time.Time
	// End is when its right to act ended: min(Until, time of Unlock).
	End time.Time
}

// String returns the holder and the interval's length: "rueidis/2 held for
// 12ms".
func (g Grant) String() string {
	return fmt.Sprintf("%s held for %v", g.Holder, g.End.Sub(g.Start))
}

// Overlap is a pair of grants whose intervals intersect: two holders that
// both had the right to act at once. A safe lock never has one.
type Overlap struct {
	// First started no later than Second.
	First, Second Grant
}

// Duration returns how long both grants held at once.
func (o Overlap) Duration() time.Duration {
	return earlier(o.First.End, o.Second.End).Sub(o.Second.Start)
}

// String describes the pair: "rueidis/2 and goredis/1 both held for 3ms".
func (o Overlap) String() string {
	return fmt.Sprintf("%s and %s both held for %v (second granted %v after the first)",
		o.First.Holder, o.Second.Holder, o.Duration(), o.Second.Start.Sub(o.First.Start))
}

// Overlaps returns every pair of grants whose intervals intersect, that is
// every pair of holders that had the right to act at the same time. Intervals
// are half-open: a grant that starts exactly when another ends does not
// overlap it. Grants with no interval (End not after Start) never overlap.
// The result is sorted by the first grant's start, then the second's.
func Overlaps(grants []Grant) []Overlap {
	gs := make([]Grant, 0, len(grants))
	for _, g := range grants {
		if g.End.After(g.Start) {
			gs = append(gs, g)
		}
	}
	slices.SortStableFunc(gs, func(a, b Grant) int { return a.Start.Compare(b.Start) })
	var out []Overlap
	for i, a := range gs {
		// Every later grant that starts before a ends overlaps it; the ones
		// after the first that does not cannot, since they start later still.
		for _, b := range gs[i+1:] {
			if !b.Start.Before(a.End) {
				break
			}
			out = append(out, Overlap{First: a, Second: b})
		}
	}
	return out
}

// earlier returns the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
