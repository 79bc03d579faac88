package benchrun

import (
	"strings"
	"testing"
	"time"
)

// The estimate of the runs left prices each by its own last run, else by
// its case's runs so far, and is a lower bound, saying so, while a case has
// not run. Before, every run left was priced at the mean of all runs so far:
// after the four Lock runs of 1s here, the 10 runs left (the first round's
// Stalled and Scale, then the second round) were put at 1s each, 10s, where
// they take 144s (an outside check found the estimate far too low in the
// Stalled case).
func TestClockLeft(t *testing.T) {
	lock := []*Result{{Case: "Lock", Contender: "a"}, {Case: "Lock", Contender: "b"}, {Case: "Lock", Contender: "c"}, {Case: "Lock", Contender: "d"}}
	stalled := []*Result{{Case: "Stalled", Contender: "a"}, {Case: "Stalled", Contender: "b"}}
	scale := &Result{Case: "Scale", Contender: "a"}
	cost := map[string]time.Duration{"Lock": time.Second, "Stalled": 20 * time.Second, "Scale": 30 * time.Second}
	round := append(append(append([]*Result{}, lock...), stalled...), scale)
	schedule := append(append([]*Result{}, round...), round...) // two rounds
	var c clock
	for i, res := range schedule {
		c.took(res, cost[res.Case])
		rest := schedule[i+1:]
		var want time.Duration
		for _, r := range rest {
			want += cost[r.Case]
		}
		got, unpriced := c.left(rest)
		text := c.leftText(rest)
		switch {
		case i < 4: // the Lock runs of round 1: Stalled and Scale not timed
			if got >= want || unpriced == 0 || !strings.HasPrefix(text, "over ") {
				t.Errorf("after run %d: left %v (%d unpriced, %q); want a lower bound below %v that says so", i+1, got, unpriced, text, want)
			}
		case i < 6: // Stalled timed, its runs priced by it; Scale's two runs not
			if got != want-2*cost["Scale"] || unpriced != 2 {
				t.Errorf("after run %d: left %v (%d unpriced); want %v and Scale's 2 runs unpriced", i+1, got, unpriced, want-2*cost["Scale"])
			}
		default:
			if got != want || unpriced != 0 || (len(rest) > 0 && !strings.HasPrefix(text, "about ")) {
				t.Errorf("after run %d: left %v (%d unpriced, %q); want %v", i+1, got, unpriced, text, want)
			}
		}
	}
	if text := c.leftText(nil); text != "done" {
		t.Errorf("leftText(nil) = %q, want done", text)
	}
}
