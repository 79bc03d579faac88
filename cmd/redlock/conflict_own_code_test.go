//go:build unix

package main

import (
	"strings"
	"testing"
)

// --conflict-exit-code N where N is run's and hold's own code for another
// outcome of the lock, 69 (too many nodes failed) or 76 (the lock lost), is
// a usage error that says what each means: a script could not tell a busy
// lock from those. Before, both were accepted, and a conflict exited 69 or
// 76. The flag's other values, flock -E's range, stay (TestConflictExitCode).
func TestConflictExitCodeOwnCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"run", "--conflict-exit-code", "69", "--wait", "0", "--nodes", "127.0.0.1:1", "k", "--", "true"}},
		{nil, []string{"run", "--conflict-exit-code", "76", "--wait", "0", "--nodes", "127.0.0.1:1", "k", "--", "true"}},
		{nil, []string{"hold", "--conflict-exit-code", "69", "--wait", "0", "--nodes", "127.0.0.1:1", "k"}},
		{nil, []string{"hold", "--conflict-exit-code", "76", "--wait", "0", "--nodes", "127.0.0.1:1", "k"}},
		{[]string{"REDLOCK_CONFLICT_EXIT_CODE=76"}, []string{"hold", "--wait", "0", "--nodes", "127.0.0.1:1", "k"}},
	} {
		r := invokeEnv(t, tc.env, "", tc.args...)
		name := tc.args[0]
		for _, want := range []string{name + ": --conflict-exit-code", "69 when too many nodes failed for a quorum", "76 when the lock was lost"} {
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("%v redlock %s: want exit 2 and %q on stderr, got %v", tc.env, strings.Join(tc.args, " "), want, r)
			}
		}
	}
}
