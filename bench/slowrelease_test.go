package bench

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestSlowRelease checks which Unlock errors a hand-off counts as slow
// releases rather than failures: only nodes that timed out, with no more
// refusals than nodes outside a quorum.
func TestSlowRelease(t *testing.T) {
	timedOut := &redlock.NodeError{Addr: "127.0.0.1:1", Err: fmt.Errorf("valkeygo: release: %w", context.DeadlineExceeded)}
	refusedConn := &redlock.NodeError{Addr: "127.0.0.1:1", Err: fmt.Errorf("valkeygo: release: %w", syscall.ECONNREFUSED)}
	unlock := func(v redlock.VoteError, causes ...error) error {
		return fmt.Errorf("Unlock: %w", errors.Join(append([]error{redlock.ErrLockLost, &v}, causes...)...))
	}
	for _, c := range []struct {
		name string
		err  error
		slow bool
	}{
		{"nil", nil, false},
		{"three of five timed out", unlock(redlock.VoteError{Granted: 2, Failed: 3, Needed: 3, Nodes: 5}, timedOut, timedOut, timedOut), true},
		{"one of one timed out", unlock(redlock.VoteError{Failed: 1, Needed: 1, Nodes: 1}, timedOut), true},
		{"timed out, refused by a minority", unlock(redlock.VoteError{Granted: 1, Refused: 2, Failed: 2, Needed: 3, Nodes: 5}, timedOut, timedOut), true},
		{"refused by a quorum", unlock(redlock.VoteError{Refused: 3, Failed: 2, Needed: 3, Nodes: 5}, timedOut, timedOut), false},
		{"refused by every node", unlock(redlock.VoteError{Refused: 5, Needed: 3, Nodes: 5}), false},
		{"connections refused", unlock(redlock.VoteError{Granted: 2, Failed: 3, Needed: 3, Nodes: 5}, refusedConn, refusedConn, refusedConn), false},
		{"no vote", fmt.Errorf("Unlock: %w", context.DeadlineExceeded), false},
	} {
		if got := slowRelease(c.err); got != c.slow {
			t.Errorf("%s: slowRelease(%v) = %v, want %v", c.name, c.err, got, c.slow)
		}
	}
}
