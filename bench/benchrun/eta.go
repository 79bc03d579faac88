package benchrun

import (
	"fmt"
	"time"
)

// clock estimates, for the progress lines, how long the runs left take.
// It prices each run by that benchmark's own last run (an earlier round's),
// else by the mean of its case's runs so far: the cases' runs differ by far
// more than the runs of one case do (a Stalled run waits for its stalled
// nodes, a Scale run holds its locks for ScaleFor), so that pricing every
// run at the mean of all so far, as the estimate once did, put the slow
// cases of the first round, not yet run, at the fast ones' price. A run of
// a case not timed yet has no price: the estimate is then a lower bound,
// and says so.
type clock struct {
	last   map[*Result]time.Duration // each benchmark's last run
	byCase map[string]caseTime       // every run so far, by case
}

// caseTime is the runs of one case so far: how many, how long in all.
type caseTime struct {
	n   int
	sum time.Duration
}

// took records that a run of res took d.
func (c *clock) took(res *Result, d time.Duration) {
	if c.last == nil {
		c.last, c.byCase = make(map[*Result]time.Duration), make(map[string]caseTime)
	}
	c.last[res] = d
	ct := c.byCase[res.Case]
	ct.n++
	ct.sum += d
	c.byCase[res.Case] = ct
}

// left returns the estimate of the runs rest and how many of them have no
// price (their case has not run yet).
func (c *clock) left(rest []*Result) (d time.Duration, unpriced int) {
	for _, res := range rest {
		if t, ok := c.last[res]; ok {
			d += t
		} else if ct := c.byCase[res.Case]; ct.n > 0 {
			d += ct.sum / time.Duration(ct.n)
		} else {
			unpriced++
		}
	}
	return d, unpriced
}

// leftText is the progress line's words for the estimate of the runs rest.
func (c *clock) leftText(rest []*Result) string {
	d, unpriced := c.left(rest)
	switch {
	case len(rest) == 0:
		return "done"
	case unpriced == 0:
		return fmt.Sprintf("about %s left", d.Round(time.Second))
	case unpriced == 1:
		return fmt.Sprintf("over %s left: 1 run of a case not timed yet", d.Round(time.Second))
	}
	return fmt.Sprintf("over %s left: %d runs of cases not timed yet", d.Round(time.Second), unpriced)
}
