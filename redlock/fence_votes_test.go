package redlock_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A fenced grant whose token could not be written to a quorum, because too
// many nodes failed the write, matches ErrUnavailable; the *VoteError that
// errors.As finds in its chain must then be the one with those counts (as
// ErrUnavailable's doc says: "The *VoteError in the same chain has the
// counts"), the fence write's, not the acquisition's, which a quorum granted
// with no node failed. Before, errors.As found the acquisition's votes first
// ("2 of 3 nodes agreed, 2 needed (0 refused, 0 failed)") beside an
// ErrUnavailable that they contradict.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestFenceNotWrittenVotesAreTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := []driver.Node{noRaise{mem[0]}, noRaise{mem[1]}, noRaise{mem[2]}}
		c := newClient(t, nodes, redlock.WithFencing())
		_, err := c.TryLock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrFenceNotWritten)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "every node fails the fence write: no quorum can write it")
		var ve *redlock.VoteError
		require.True(t, errors.As(err, &ve), "a *VoteError in the chain: %v", err)
		require.GreaterOrEqual(t, ve.Failed, 2, "errors.As finds the votes that make the error ErrUnavailable: %v", err)
		require.True(t, errors.Is(ve, redlock.ErrUnavailable), "the *VoteError found: %v", ve)
	})
}
