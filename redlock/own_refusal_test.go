package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A Lock whose nodes are mostly down (TestRedisUnavailable's three of five)
// is refused by its own earlier attempt's key on a live node: that node's
// SET was applied but answered only at the node timeout, and its release,
// left to the background, had not been answered when the next attempt came.
// The next attempt's round decided on that refusal and on the two down nodes
// that fail at once (the third hangs until the node timeout), which read as
// 'refused 1, failed 2': a lock held elsewhere (ErrNotObtained alone), not
// unavailable. A refusal by the waiter's own key is no other holder's: the
// node counts as failed, and Lock's verdict matches ErrUnavailable.
func TestLockRefusedByItsOwnEarlierKeyIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		mem[0].SetDown(true)
		mem[1].SetDown(true)
		mem[2].SetStalled(true) // a dial that hangs until the node timeout
		faults := &leftoverFaults{}
		faults.slowSets.Store(true)
		faults.holdReleases()
		defer faults.letReleases()
		waiterNodes := append([]driver.Node(nil), nodes...)
		waiterNodes[3] = leftoverNode{mem[3], faults}
		log := &attemptLog{}
		c := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)), redlock.WithObserver(log))

		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		attempts, _ := log.since(start)
		require.GreaterOrEqual(t, attempts, 2, "the first attempt, then those refused by its key")
		require.True(t, mem[3].Holds("k"), "the first attempt's key, its release held up")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		require.Equal(t, 1, v.Refused, "its own key, on the fourth node: %v", err)
		require.Equal(t, 3, v.Failed, "the down nodes, the hanging one too: %v", err)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "three of five nodes down")
		mem[2].SetStalled(false)
	})
}
