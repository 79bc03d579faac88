package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// An Extend whose calls all returned before it was judged still belongs to
// the group of the Extends that overlapped it: a shorter Extend that
// overlapped it, and has ended since, may have landed after it on a node of
// its quorum, so it caps its validity, even if a new Extend begins in
// between. Before 12-01, the Extend left its group when its calls
// returned; the group then ended, the new Extend began another, and the
// judgement raised Until to the longer Extend's bound, past what the node
// keeps.
func TestExtendJudgedAfterItsCallsKeepsItsGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithTTL(10*time.Second))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)

		time.Sleep(time.Second)
		const short = 2 * time.Second
		shortReturned, shortJudged, err := redlock.ExtendSteps(l, short)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		returned, judged, err := redlock.ExtendSteps(l, 10*time.Second)
		require.NoError(t, err)

		shortReturned(false)
		require.NoError(t, shortJudged())
		returned(false) // every call back, not judged yet
		time.Sleep(100 * time.Millisecond)
		nextReturned, nextJudged, err := redlock.ExtendSteps(l, 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, judged())

		limit := start.Add(short - driftOf(short))
		require.False(t, l.Until().After(limit), "Until %v after the start of the long Extend, past the %v that the short one, which may have landed after it, leaves", l.Until().Sub(start), limit.Sub(start))
		require.NoError(t, nextJudged())
		nextReturned(false)
		require.NoError(t, l.Unlock(t.Context()))
	})
}
