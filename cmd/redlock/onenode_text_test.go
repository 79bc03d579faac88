//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestOneNodeCountedOnce: every count of a one-node set says "1 node", not
// "1 nodes", as the votes' summary, the loss line and doctor's summary do
// since they were fixed: status's verdict and its exit line, doctor's quorum
// check, and run -v's wait.
func TestOneNodeCountedOnce(t *testing.T) {
	t.Parallel()
	down := redistest.DownAddrs(t, 1)[0]
	r := invoke(t, "", "status", "--nodes", down, "k")
	for _, want := range []string{"held on 0 of 1 node, 0 answered", "fewer than a quorum (1) of the 1 node answered"} {
		if r.code != exitUnavailable || !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("status on one node that is down: want exit %d and %q, got %v", exitUnavailable, want, r)
		}
	}
	r = invoke(t, "", "doctor", "--nodes", down)
	if want := "only 0 of 1 node reachable"; r.code != 1 || !strings.Contains(r.stdout, want) {
		t.Errorf("doctor on one node that is down: want exit 1 and %q, got %v", want, r)
	}

	_, addrs := nodes(t, 1)
	holder, _ := startHold(t, "--nodes", addrs, "--for", "1s", "k")
	r = invoke(t, "", "run", "--nodes", addrs, "-v", "--wait", "30s", "k", "--", "true")
	if want := "(held elsewhere: 1 of 1 node refused, 0 granted, 1 needed)"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("run -v on one node while hold held the lock: want exit 0 and %q, got %v", want, r)
	}
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Errorf("hold --for 1s: exit %d", code)
	}
}
