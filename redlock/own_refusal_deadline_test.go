package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// deadlineNode is a memory node whose SETs hang until their context's
// deadline and then fail, as a driver whose socket deadline is the
// context's (redigo) does on a server that does not answer.
type deadlineNode struct{ *memory.Node }

func (n deadlineNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if d, ok := ctx.Deadline(); ok {
		time.Sleep(time.Until(d))
	}
	return false, errors.New("i/o timeout")
}

// lateTimerCtx is a context whose Deadline says d while its Done closes a
// little later: its timer has not fired yet (see callerEnded).
type lateTimerCtx struct {
	context.Context
	d time.Time
}

func (c lateTimerCtx) Deadline() (time.Time, bool) { return c.d, true }

// TestLockOwnRefusalCutByCallerDeadlineIsNoVerdict: an attempt that
// waitPastOwn holds past its own key's refusal, whose last pending node fails
// at the caller's deadline (a socket deadline that is the context's, before
// the context's timer fired), was cut short by the caller, as wait judges
// (callerEnded): not a verdict. waitPastOwn took that failure as the node's
// answer (uncounted, as the caller's) and kept the attempt decided, so Lock
// returned its counts, "1 refused, 2 failed", without ErrUnavailable,
// rather than the verdict of its last attempt that finished (4 failed).
func TestLockOwnRefusalCutByCallerDeadlineIsNoVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		mem[0].SetDown(true)
		mem[1].SetDown(true)
		faults := &leftoverFaults{}
		faults.slowSets.Store(true)
		faults.holdReleases()
		defer faults.letReleases()
		waiterNodes := append([]driver.Node(nil), nodes...)
		waiterNodes[2] = deadlineNode{mem[2]}
		waiterNodes[3] = leftoverNode{mem[3], faults}
		log := &attemptLog{}
		c := newClient(t, waiterNodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)), redlock.WithObserver(log))

		start := time.Now()
		// The first attempt ends at the node timeout (100ms); the next,
		// right after, is refused by its key on node 3 and waits for node
		// 2 past that refusal, whose call ends at the caller's deadline.
		inner, cancel := context.WithDeadline(t.Context(), start.Add(151*time.Millisecond))
		defer cancel()
		ctx := lateTimerCtx{inner, start.Add(150 * time.Millisecond)}
		_, err := c.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		attempts, _ := log.since(start)
		require.GreaterOrEqual(t, attempts, 2, "the first attempt, then the one refused by its key")
		require.True(t, mem[3].Holds("k"), "the first attempt's key, its release held up")
		require.ErrorIs(t, err, redlock.ErrUnavailable, "three of five nodes down or hanging: %v", err)
	})
}
