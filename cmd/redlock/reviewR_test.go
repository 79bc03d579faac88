//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redlock"
)

// TestDemoTooManyNodes: demo --nodes past redlock.MaxNodes is a usage error
// before any node starts. It started them all (65 redis-server processes
// without --memory), then every part failed with "65 nodes are more than
// 64" and the demo exited with 1.
func TestDemoTooManyNodes(t *testing.T) {
	t.Parallel()
	n := fmt.Sprint(redlock.MaxNodes + 1)
	for _, args := range [][]string{
		{"demo", "--memory", "--nodes", n},
		{"demo", "--nodes", n, "--duration", "100ms"},
	} {
		r := invoke(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "at most 64") || r.stdout != "" {
			t.Errorf("redlock %q: want exit 2, \"at most 64\" on stderr and no node started (nothing on stdout), got %v", args, r)
		}
	}
}
