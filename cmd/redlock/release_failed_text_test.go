package main

import (
	"context"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestReleaseFailedText: the line of a release that Unlock could not
// confirm calls "released" only what the nodes released: a node that
// answered that it no longer held the key (its key evicted, deleted or
// expired there, or deleted by an earlier send of the release that failed)
// released nothing then, and the line says so. It called every answer a
// release: "1 of 3 nodes released it" for a node that had answered "not
// held" (an outside check: key deleted on one of three servers, the two
// others killed before the release).
func TestReleaseFailedText(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		answers map[string][]bool // node: its answers (OK) in order
		want    string
	}{
		{"one not held", map[string][]bool{"a": {false}},
			`failed (1 of 3 nodes released it or no longer held it, its repeat included); it expires by itself`},
		{"one released", map[string][]bool{"a": {true}},
			`failed (1 of 3 nodes released it, its repeat included); it expires by itself`},
		{"all released", map[string][]bool{"a": {true}, "b": {true}, "c": {true}},
			`failed at first, then its repeat released it on all 3 nodes`},
		{"all answered", map[string][]bool{"a": {true}, "b": {false}, "c": {true}},
			`failed at first, then its repeat released it or found it gone on all 3 nodes`},
		{"released, then not held", map[string][]bool{"a": {true, false}, "b": {true}},
			`failed (2 of 3 nodes released it, its repeat included)`},
	} {
		e := &lockEvents{}
		_, done := e.Unlock(ctx, redlock.UnlockStart{Key: "k"})
		for node, oks := range tc.answers {
			for _, ok := range oks {
				e.NodeCall(ctx, redlock.NodeCall{Key: "k", Node: node, Operation: redlock.OpRelease, OK: ok})
			}
		}
		done(redlock.UnlockDone{Key: "k", Votes: redlock.Votes{Nodes: 3}})
		if got := releaseFailedText("k", e); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to contain %q", tc.name, got, tc.want)
		}
	}
}
