package main

import (
	"strings"
	"testing"
	"time"
)

// run --wait 0 and hold --wait 0 on a key held elsewhere say so in the
// command's words, as --wait 0 (one attempt), not as the library's option
// that makes it so (WithMaxAttempts), which the shell user never set; the
// exit code stays 75.
func TestWaitZeroMessage(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	holder := start(t, "run", "--nodes", addrs, "--key", "busy", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)
	// A generous node timeout: on a loaded machine, a node slower than the
	// default 200ms counts as failed, and the verdict would be 69.
	for _, args := range [][]string{
		{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy", "--", "true"},
		{"hold", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy"},
		{"run", "-v", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--conflict-exit-code", "0", "busy", "--", "true"},
	} {
		r := invoke(t, "", args...)
		want := exitConflict
		if strings.Contains(strings.Join(args, " "), "--conflict-exit-code 0") {
			want = 0
		}
		if r.code != want {
			t.Errorf("redlock %s: want exit %d, got %v", strings.Join(args, " "), want, r)
			continue
		}
		if strings.Contains(r.stderr, "WithMaxAttempts") || strings.Contains(r.stderr, "gave up after") {
			t.Errorf("redlock %s names the library's option:\n%s", strings.Join(args, " "), r.stderr)
		}
		if !strings.Contains(r.stderr, `lock "busy" not obtained: held elsewhere (--wait 0: one attempt):`) {
			t.Errorf("redlock %s does not say the key is held, in one attempt:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
}
