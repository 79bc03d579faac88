//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestRunWaitOverSaysNoContextCanceled: when --wait ends, run says that the
// lock was not obtained within it, and why (held elsewhere, or too many
// nodes failed), with the nodes' errors. It ended with a line "context
// canceled", the error of the wait's context that the library joins in,
// which reads as if something had canceled run (a signal, say), as the
// line of an interrupted wait once did (TestHoldInterruptedSaysSo).
//
// A generous --node-timeout, as the other tests of run that are not about
// timeouts: --wait 500ms leaves the connections 250ms (half the wait), and
// with the default 200ms a loaded machine's first attempt still dialing
// counted two live nodes as failed ("SET NX: connect: still connecting:
// context deadline exceeded"): exit 69 where the lock was held elsewhere.
func TestRunWaitOverSaysNoContextCanceled(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, s := range servers {
		if _, err := s.Do(t.Context(), "SET", "busy", "another's", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "500ms", "busy", "--", "true")
	if r.code != exitConflict || !strings.Contains(r.stderr, "not obtained within 500ms: held elsewhere") || strings.Contains(r.stderr, "context canceled") {
		t.Errorf("run --wait 500ms on a lock held elsewhere: want exit %d, held elsewhere, no \"context canceled\"; got %v", exitConflict, r)
	}
	for _, s := range servers[1:] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r = invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "500ms", "free", "--", "true")
	if r.code != exitUnavailable || !strings.Contains(r.stderr, "not obtained within 500ms: too many nodes failed") || strings.Contains(r.stderr, "context canceled") {
		t.Errorf("run --wait 500ms with 2 of 3 nodes down: want exit %d, too many nodes failed, no \"context canceled\"; got %v", exitUnavailable, r)
	}
}
