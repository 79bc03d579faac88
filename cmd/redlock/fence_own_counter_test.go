//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestRunFencedOwnCounterStops: a fenced lock named as its own counter
// (redlock:fence:{0}, whose slot is its tag's) is granted, and then its
// token's write finds the lock's value where the counter goes, on every
// node: an error that retrying cannot fix, on which run stops at once, exit
// 1, rather than retry until --wait ran out (it did, each attempt told as
// "waiting for ... (0 of 3 nodes failed, 2 needed: no quorum possible)", the
// SETs' votes, and without --wait for ever). Nothing is left on the nodes.
func TestRunFencedOwnCounterStops(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	const key = "redlock:fence:{0}"
	r := invoke(t, "", "run", "--fencing", "--wait", "3s", "--nodes", addrs, key, "--", "true")
	if r.code != exitFailure || !strings.Contains(r.stderr, "fencing token not written to a quorum") ||
		!strings.Contains(r.stderr, "answered ERR fencing counter holds no number, which retrying cannot fix") {
		t.Fatalf("run --fencing of a lock named as its own counter: want exit 1, the token not written, for good; got %v", r)
	}
	if strings.Contains(r.stderr, "waiting for") {
		t.Errorf("run retried an attempt whose token write failed for good:\n%s", r.stderr)
	}
	for _, s := range servers {
		if n, err := s.Do(t.Context(), "EXISTS", key); err != nil || n != int64(0) {
			t.Errorf("%s: EXISTS %s = %v, %v after the failed run; want 0", s.Addr(), key, n, err)
		}
	}
}
