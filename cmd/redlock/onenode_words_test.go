//go:build unix

package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// A set of one node is counted as "1 node", not "1 nodes", in every line the
// command prints of it, as the votes' summary, the extension and loss lines
// and doctor's summary count it: status's verdict line and its exit-69 error,
// run's -v wait for a node that fails or refuses, and doctor's reachability
// and duplicates checks. (The release's lines: TestOneNodeReleaseLines.)
func TestOneNodeWords(t *testing.T) {
	t.Parallel()
	_, addr := nodes(t, 1)
	down := redistest.DownAddrs(t, 1)[0]
	holder := start(t, "run", "--nodes", addr, "--key", "busy", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)
	plural := regexp.MustCompile(`\b1 nodes\b`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--nodes", addr, "busy"}, "held on 1 of 1 node, 1 answered"},
		{[]string{"status", "--timeout", "500ms", "--nodes", down, "busy"}, "fewer than a quorum (1) of the 1 node answered"},
		{[]string{"run", "-v", "--wait", "300ms", "--nodes", down, "free", "--", "true"}, "(1 of 1 node failed, 1 needed"},
		{[]string{"run", "-v", "--wait", "300ms", "--nodes", addr, "busy", "--", "true"}, "(held elsewhere: 1 of 1 node refused, 0 granted, 1 needed)"},
		{[]string{"doctor", "--nodes", down}, "only 0 of 1 node reachable"},
		{[]string{"doctor", "--nodes", addr}, "1 distinct server (run_id)"},
	} {
		r := invoke(t, "", c.args...)
		out := r.stdout + r.stderr
		if !strings.Contains(out, c.want) || plural.MatchString(out) {
			t.Errorf("redlock %s: want %q and no \"1 nodes\", got %v", strings.Join(c.args, " "), c.want, r)
		}
	}
}
