//go:build unix

package main

import (
	"strings"
	"testing"
)

// demo's help says that --nodes sets how many nodes it starts, and its
// default as the flag has it: it said "five local nodes" whatever --nodes
// gave (an outside check).
func TestDemoHelpNodes(t *testing.T) {
	t.Parallel()
	cmd := demoCommand()
	def := cmd.Flags().Lookup("nodes").DefValue
	first, _, _ := strings.Cut(cmd.Long, "(")
	if !strings.Contains(first, "--nodes") || !strings.Contains(first, def) {
		t.Errorf("demo --help begins %q: want it to say that --nodes sets the count, %s by default", first, def)
	}
	if r := invoke(t, "", "demo", "--help"); r.code != 0 || !strings.Contains(r.stdout, first) {
		t.Errorf("redlock demo --help: want exit 0 and %q, got %v", first, r)
	}
}
