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

// slowReleaseNoRaise is a fencing memory node whose counter writes fail
// (noRaise) and whose releases take 100ms.
type slowReleaseNoRaise struct{ noRaise }

func (n slowReleaseNoRaise) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	time.Sleep(100 * time.Millisecond)
	return n.Node.EvalRelease(ctx, key, value)
}

func (n slowReleaseNoRaise) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	time.Sleep(100 * time.Millisecond)
	return n.Node.ReleaseNotify(ctx, key, value)
}

// A TryLock with WithFencing whose grant's token is not written to a
// quorum (ErrFenceNotWritten) releases the granted keys before it returns,
// waiting for the nodes that granted them: its context ends during that
// wait. The error must have ctx.Err(), as every call's whose context had
// ended when it returned (README, Errors; TestErrorContractUnderFaults
// checks it). The fence's error, which has ctx.Err() only when the context
// had ended by then, was the whole verdict: TestErrorContractUnderFaults
// seed 1476 failed so, once in about 2000 seeds a run
// (REDLOCK_FUZZ_SEEDS=2000: 1 failure in 6 runs), "TryLock: ctx had ended
// when the call returned (context deadline exceeded), its error does not
// have it: redlock: lock not obtained\nredlock: fencing token not written
// to a quorum...".
func TestFenceNotWrittenCtxEndedDuringRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = slowReleaseNoRaise{noRaise{m}}
		}
		c := newClient(t, nodes, redlock.WithFencing())
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := c.TryLock(ctx, "k")
		require.Error(t, ctx.Err(), "the context ended before TryLock returned")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrFenceNotWritten)
		require.ErrorIs(t, err, ctx.Err(), "TryLock's context had ended when it returned: %v", err)
	})
}
