//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// Two seeds of one Redis Cluster written comma-separated in --nodes are
// two nodes, which run, hold and status refuse as one cluster given twice
// (exit 2), and doctor fails: the refusal says how the seeds of one cluster
// are written (one address, with addr=) and that the comma split them.
// Before, it said only that the two reach the same server or cluster (an
// outside check).
func TestClusterSeedsCommaSeparated(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	seeds := c.Seeds()
	nodes := "redis://" + seeds[0] + "?cluster=true,redis://" + seeds[1] + "?cluster=true"
	wants := []string{"a ',' in --nodes separates nodes", "?cluster=true&addr="}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "--nodes", nodes, "--node-timeout", "2s", "--wait", "0", "k", "--", "true"}, exitUsage},
		{[]string{"hold", "--nodes", nodes, "--node-timeout", "2s", "--wait", "0", "--for", "1ms", "k"}, exitUsage},
		{[]string{"status", "--nodes", nodes, "k"}, exitUsage},
		{[]string{"doctor", "--nodes", nodes}, exitFailure},
	} {
		r := invoke(t, "", tc.args...)
		for _, want := range wants {
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, want) {
				t.Errorf("redlock %s: want exit %d and %q, got %v", strings.Join(tc.args, " "), tc.code, want, r)
			}
		}
	}
}
