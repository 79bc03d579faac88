package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// -v tells a wait whose refusals may be by the command's own keys of earlier
// attempts (redlock.Votes.Own) without calling the lock held elsewhere: with
// --node-timeout 1ns, run said "held elsewhere: 3 of 3 nodes refused" with
// no other client, every refusal one of its own SETs that timed out after
// the node applied it, its release timed out too.
func TestVerboseOwnRefusalsNotHeldElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		own  int
		want string
	}{
		{0, "redlock: waiting for k (held elsewhere: 3 of 3 nodes refused, 0 granted, 2 needed)\n"},
		{3, "redlock: waiting for k (3 of 3 nodes refused, 0 granted, 2 needed; 3 of the refusals may be by this command's own key of an earlier attempt, whose SET or release there failed and whose release is not confirmed yet: a node timeout too short for the nodes leaves such keys until their TTL)\n"},
	} {
		var stderr bytes.Buffer
		e := &lockEvents{verbose: true, stderr: &stderr, firstDone: make(chan struct{})}
		_, end := e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: 2})
		end(redlock.AttemptDone{Key: "k", Attempt: 2, Outcome: redlock.OutcomeNotObtained, Votes: redlock.Votes{Nodes: 3, Quorum: 2, Refused: 3, Own: tc.own}, Err: redlock.ErrNotObtained})
		if got := stderr.String(); got != tc.want {
			t.Errorf("-v, an attempt refused by 3 nodes, %d maybe by its own keys: got\n%s\nwant\n%s", tc.own, got, tc.want)
		}
		if tc.own > 0 && strings.Contains(stderr.String(), "held elsewhere") {
			t.Errorf("-v calls the lock held elsewhere when its own keys may have refused it")
		}
	}
}
