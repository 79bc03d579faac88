package redlock_test

import (
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestVoteErrorNodeCount: the votes' summary counts one node as "node", as
// a one-node Client's failed acquisition shows it ("0 of 1 node agreed"),
// and any other number as "nodes".
func TestVoteErrorNodeCount(t *testing.T) {
	for _, c := range []struct {
		e    redlock.VoteError
		want string
	}{
		{redlock.VoteError{Nodes: 1, Needed: 1, Failed: 1}, "0 of 1 node agreed, 1 needed (0 refused, 1 failed): too many nodes failed for a quorum"},
		{redlock.VoteError{Nodes: 1, Needed: 1, Refused: 1}, "0 of 1 node agreed, 1 needed (1 refused, 0 failed)"},
		{redlock.VoteError{Nodes: 3, Granted: 1, Needed: 2, Refused: 2}, "1 of 3 nodes agreed, 2 needed (2 refused, 0 failed)"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
