package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestChaos runs a short soak: it must finish, report, and find no overlap.
func TestChaos(t *testing.T) {
	redistest.NewServer(t) // skips, or fails in CI, without redis-server
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-duration", "1s", "-nodes", "3"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "overlaps: 0") || !strings.Contains(stdout.String(), "grants: ") {
		t.Fatalf("chaos -duration 1s: exit %d, want 0 with grants and no overlap\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
}

// TestChaosBadFlags exits 2 with a message for bad input.
func TestChaosBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-duration", "0s"}, {"-drivers", "nope"}, {"extra"}, {"-no-such-flag"}} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("chaos %q: exit %d, stderr %q; want 2 and a message", args, code, &stderr)
		}
	}
}
