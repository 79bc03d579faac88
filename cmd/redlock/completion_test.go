//go:build unix

package main

import (
	"strings"
	"testing"
)

// A bad argument of "redlock completion" is a usage error (exit 2), as
// "redlock nosuch" and "redlock help nosuch" are: cobra's own completion
// command shows its help with exit 0 for an unknown shell, and fails with
// exit 1 for an argument after the shell.
func TestCompletionUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"completion", "nosuch"}, `unknown shell "nosuch"`},
		{[]string{"completion", "bash", "extra"}, "takes no arguments"},
	} {
		r := invoke(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("redlock %s: want exit 2 and %q on stderr, got %v", strings.Join(tc.args, " "), tc.want, r)
		}
	}
}
