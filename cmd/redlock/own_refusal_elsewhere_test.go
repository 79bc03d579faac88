package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// -v still calls a lock held elsewhere when the refusals of the nodes where
// the command's own key may be left (redlock.Votes.Own) are not what keeps
// it from a quorum: the others' refusals, by keys that are not its own,
// alone leave no quorum possible. Before, any Own > 0 dropped "held
// elsewhere", and as -v tells a not-obtained wait once, a wait whose first
// refusal was by its own key never told that another client held the lock
// once one did.
func TestVerboseOwnRefusalsHeldElsewhereStillTold(t *testing.T) {
	t.Parallel()
	attempt := func(e *lockEvents, n int, v redlock.Votes) {
		_, end := e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: n})
		end(redlock.AttemptDone{Key: "k", Attempt: n, Outcome: redlock.OutcomeNotObtained, Votes: v, Err: redlock.ErrNotObtained})
	}
	const elsewhere = "redlock: waiting for k (held elsewhere: "
	t.Run("OthersRefusalsDecide", func(t *testing.T) {
		// 3 refused, 1 maybe by its own key: the other 2, more than
		// Nodes-Quorum, are another's keys.
		var stderr bytes.Buffer
		e := &lockEvents{verbose: true, stderr: &stderr, firstDone: make(chan struct{})}
		attempt(e, 2, redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3, Own: 1})
		if !strings.HasPrefix(stderr.String(), elsewhere) {
			t.Errorf("-v, 3 of 3 refused, 1 maybe by its own key: got %q, want it held elsewhere", stderr.String())
		}
	})
	t.Run("OwnThenElsewhere", func(t *testing.T) {
		// The second attempt refused by its own keys, a later one by
		// another's on every node.
		var stderr bytes.Buffer
		e := &lockEvents{verbose: true, stderr: &stderr, firstDone: make(chan struct{})}
		attempt(e, 2, redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3, Own: 3})
		attempt(e, 3, redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3})
		attempt(e, 4, redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3})
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "may be by this command's own key") || !strings.HasPrefix(lines[1], elsewhere) {
			t.Errorf("-v, refused by its own keys, then twice by another's: got\n%s\nwant the own line, then held elsewhere once", stderr.String())
		}
	})
}
