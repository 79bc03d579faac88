package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestLostHowNodeCount: the loss line of a one-node set counts "1 node",
// not "1 nodes", as the votes' own summary does.
func TestLostHowNodeCount(t *testing.T) {
	for _, c := range []struct {
		ve   *redlock.VoteError
		want string
	}{
		{&redlock.VoteError{Nodes: 1, Needed: 1, Failed: 1}, "(0 of 1 node agreed, 1 needed; 0 said they no longer held it, 1 failed)"},
		{&redlock.VoteError{Nodes: 3, Granted: 1, Needed: 2, Failed: 2}, "(1 of 3 nodes agreed, 2 needed; 0 said they no longer held it, 2 failed)"},
	} {
		got := lostHow(redlock.EndLostUnlock, errors.Join(redlock.ErrLockLost, c.ve))
		if !strings.HasSuffix(got, c.want) {
			t.Errorf("%+v: %q, want it to end %q", *c.ve, got, c.want)
		}
	}
}
