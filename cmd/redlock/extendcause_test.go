package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// extendCause tells the errors joined in an extension's error, nested joins
// opened, but the sentinel and the votes: the nodes' errors, and any other
// error joined (the context's end, "the lock is over"), in their order, on
// one line, escaped, without "redlock: "; an error that joins nothing but
// the sentinel and the votes whole. A node's error that wraps several errors
// (fmt.Errorf with several %w) is told whole, as the node's. The output is
// the one that extendCause gave when it told a join by its text.
func TestExtendCause(t *testing.T) {
	votes := &redlock.VoteError{Granted: 1, Failed: 2, Needed: 2, Nodes: 3}
	n1 := &redlock.NodeError{Addr: "n1", Err: errors.New("i/o timeout")}
	n2 := &redlock.NodeError{Addr: "n2", Err: errors.New("LOADING Redis is loading\r\x1b[2J")}
	n3 := &redlock.NodeError{Addr: "n3", Err: fmt.Errorf("goredis: extend: %w: %w", errors.New("MOVED 1 h:1"), errors.New("the server is a node of a Redis Cluster"))}
	over := errors.New("the lock is over: its validity ended, or it was found lost or unlocked")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nodes", errors.Join(redlock.ErrLockLost, votes, n1, n2), `node n1: i/o timeout; node n2: LOADING Redis is loading\r\x1b[2J`},
		{"the context's end", errors.Join(redlock.ErrLockLost, votes, n1, context.DeadlineExceeded), "node n1: i/o timeout; context deadline exceeded"},
		{"nested", errors.Join(errors.Join(redlock.ErrLockLost, votes, n1), over), "node n1: i/o timeout; " + over.Error()},
		{"a node's error of several", errors.Join(redlock.ErrLockLost, votes, n3), "node n3: goredis: extend: MOVED 1 h:1: the server is a node of a Redis Cluster"},
		{"the sentinel and the votes alone", errors.Join(redlock.ErrLockLost, votes), `redlock: lock lost\n1 of 3 nodes agreed, 2 needed (0 refused, 2 failed): too many nodes failed for a quorum`},
		{"one error", errors.New("redlock: moot\x1b"), `moot\x1b`},
		{"one node", n2, `node n2: LOADING Redis is loading\r\x1b[2J`},
	} {
		if got := extendCause(tc.err); got != tc.want {
			t.Errorf("%s: extendCause = %q, want %q", tc.name, got, tc.want)
		}
	}
}
