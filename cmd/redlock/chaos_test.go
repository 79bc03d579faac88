//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestChaos runs a short soak: it must finish, report, and find no overlap.
func TestChaos(t *testing.T) {
	t.Parallel()
	if !haveRedisServer() {
		redistest.NewServer(t) // skips, or fails in CI, with the install hint
	}
	r := invoke(t, "", "chaos", "--duration", "1s", "--nodes", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "overlaps: 0") || !strings.Contains(r.stdout, "grants: ") {
		t.Fatalf("chaos --duration 1s: want exit 0, grants and no overlap, got %v", r)
	}
}
