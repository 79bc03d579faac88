package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestWaitNoteCountsFenceWrite: an attempt whose SETs a quorum granted but
// whose fencing token too many nodes failed to write (timeouts, say) is told
// with the votes of that write, as its error has them (see
// redlock.ErrFenceNotWritten), not with the SETs' (AttemptDone.Votes): the
// note said "(0 of 3 nodes failed, 2 needed: no quorum possible)" above an
// error of 2 failed nodes.
func TestWaitNoteCountsFenceWrite(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	e := &lockEvents{warnUnavailable: true, stderr: &stderr, firstDone: make(chan struct{})}
	_, end := e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: 1})
	write := &redlock.VoteError{Granted: 1, Failed: 2, Needed: 2, Nodes: 3}
	end(redlock.AttemptDone{
		Key: "k", Attempt: 1, Outcome: redlock.OutcomeUnavailable,
		Votes: redlock.Votes{Nodes: 3, Quorum: 2, Granted: 3},
		Err:   errors.Join(redlock.ErrNotObtained, errors.Join(redlock.ErrFenceNotWritten, write)),
	})
	if got := stderr.String(); !strings.Contains(got, `waiting for "k" (2 of 3 nodes failed, 2 needed: no quorum possible)`) &&
		!strings.Contains(got, "waiting for k (2 of 3 nodes failed, 2 needed: no quorum possible)") {
		t.Errorf("the note of a fence write that 2 of 3 nodes failed:\n%s", got)
	}
}
