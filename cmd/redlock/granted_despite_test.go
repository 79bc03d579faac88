package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TestBrokenNodeThatGrantedLaterUntold: a node that refused an attempt with
// an error retrying cannot fix (OOM under maxmemory) and then set the key in
// the attempt that obtained the lock holds it with the others: run and hold
// must not say that it "refuses every lock". One that refused and did not
// take part in the granted attempt is told, as before.
func TestBrokenNodeThatGrantedLaterUntold(t *testing.T) {
	t.Parallel()
	oom := errors.New("OOM command not allowed when used memory > 'maxmemory'.")
	for _, tc := range []struct {
		name      string
		grantedN1 bool // n1 set the key in the granted attempt
		want      int
	}{
		{"n1 granted the second attempt", true, 0},
		{"n1 refused again", false, 1},
	} {
		var stderr bytes.Buffer
		e := &lockEvents{ttl: time.Hour, stderr: &stderr, firstDone: make(chan struct{})}
		ctx, end := e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: 1})
		e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpAcquire, Err: oom})
		e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n2", Operation: redlock.OpAcquire})
		end(redlock.AttemptDone{Key: "k", Attempt: 1, Outcome: redlock.OutcomeNotObtained, Votes: redlock.Votes{Nodes: 3, Quorum: 2, Refused: 1, Failed: 1}})

		ctx, end = e.Attempt(context.Background(), redlock.AttemptStart{Key: "k", Attempt: 2})
		if tc.grantedN1 {
			e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpAcquire, OK: true})
		} else {
			e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n1", Operation: redlock.OpAcquire, Err: oom})
		}
		e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n2", Operation: redlock.OpAcquire, OK: true})
		e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: "n3", Operation: redlock.OpAcquire, OK: true})
		end(redlock.AttemptDone{Key: "k", Attempt: 2, Outcome: redlock.OutcomeGranted, Votes: redlock.Votes{Nodes: 3, Quorum: 2, Granted: 3}, Until: time.Now().Add(time.Hour)})
		if got := strings.Count(stderr.String(), "n1 refuses every lock"); got != tc.want {
			t.Errorf("%s: told %d times, want %d:\n%s", tc.name, got, tc.want, &stderr)
		}
	}
}
