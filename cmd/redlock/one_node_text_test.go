//go:build unix

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestOneNodeReleaseLines: the release's lines count one node as "1 node"
// (TestOneNodeWords has the other lines of a one-node set).
func TestOneNodeReleaseLines(t *testing.T) {
	t.Parallel()
	// The release's lines, from the command's observer.
	var stderr bytes.Buffer
	e := &lockEvents{verbose: true, stderr: &stderr}
	for _, d := range []redlock.UnlockDone{
		{Key: "one", Votes: redlock.Votes{Nodes: 1, Quorum: 1, Failed: 1}, Err: redlock.ErrUnavailable},
		{Key: "one", Votes: redlock.Votes{Nodes: 1, Quorum: 1, Refused: 1}, Err: redlock.ErrLockLost},
	} {
		_, end := e.Unlock(context.Background(), redlock.UnlockStart{Key: "one"})
		end(d)
	}
	for _, want := range []string{"releasing one failed (1 of 1 node failed)", "(0 of 1 node released it, 1 needed)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the release's line with one node: want %q, got:\n%s", want, stderr.String())
		}
	}
}
