//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestRunDashBeforeKey: "--" before KEY is refused only when no second "--"
// follows (run -- sh -c '...' would lock "sh" and run "-c"); the forms that
// give the key another way still run CMD under it: run -- KEY -- CMD (a KEY
// that begins with "-") and run --key KEY -- CMD.
func TestRunDashBeforeKey(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // CMD's output, or the usage error
	}{
		{"-- KEY -- CMD, a KEY that begins with -", []string{"--", "-dash-key", "--", "sh", "-c", "echo ran"}, 0, "ran"},
		{"--key KEY -- CMD", []string{"--key", "k", "--", "sh", "-c", "echo ran"}, 0, "ran"},
		{"-- CMD without KEY", []string{"--", "sh", "-c", "echo ran"}, 2, `run: no KEY before --: "sh"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, "", append([]string{"run", "--nodes", addrs}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Fatalf("run %q: %v; want exit %d and %q", tc.args, r, tc.code, tc.out)
			}
		})
	}
}
