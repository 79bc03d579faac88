//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestDoctorDelayedRestartAdviceSparesNoCounters: doctor's persistence
// warnings offer a delayed restart (down longer than the largest TTL) beside
// appendfsync always, after saying that the node forgets its locks and its
// fencing counters. A delayed restart saves the locks only: the node comes
// back without its counters, and a token can repeat (SAFETY.md,
// TestFencingDelayedRestartRepeatsToken in redlock/). Before, the advice
// offered it as a remedy for both.
func TestDoctorDelayedRestartAdviceSparesNoCounters(t *testing.T) {
	t.Parallel()
	none := redistest.NewServer(t, redistest.WithConfig("appendonly", "no"))
	everysec := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "everysec"))
	skipping := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"),
		redistest.WithConfig("no-appendfsync-on-rewrite", "yes"))
	rep, r := doctorJSON(t, none.Addr()+","+everysec.Addr()+","+skipping.Addr())
	if len(rep.Nodes) != 3 {
		t.Fatalf("doctor --json: want 3 nodes, got %+v\n%v", rep, r)
	}
	for i, name := range []string{"appendonly no", "appendfsync everysec", "no-appendfsync-on-rewrite yes"} {
		c, ok := findCheck(rep.Nodes[i].Checks, "persistence", statusWarn)
		if !ok {
			t.Errorf("the node with %s: no persistence warning: %+v", name, rep.Nodes[i].Checks)
			continue
		}
		if !strings.Contains(c.Message, "down for longer than") {
			t.Errorf("the node with %s: the warning no longer offers a delayed restart; update this test: %q", name, c.Message)
		}
		if !strings.Contains(c.Message, "not the fencing counters") {
			t.Errorf("the node with %s: the warning offers a delayed restart without saying that it loses the fencing counters: %q", name, c.Message)
		}
	}
}
