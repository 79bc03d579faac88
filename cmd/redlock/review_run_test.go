//go:build unix

package main

import (
	"path/filepath"
	"testing"
)

// A --wait shorter than one attempt (a round trip to the nodes, the dials
// included) still makes that attempt, as --wait 0 does: on a free lock,
// run --wait 1ms runs CMD rather than exit with 75 and say the lock is held
// elsewhere. --wait bounds the wait after a refusal, not the first try.
func TestRunShortWaitMakesOneAttempt(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	for _, cmd := range []string{"run", "hold"} {
		for _, wait := range []string{"1ns", "1ms"} {
			marker := filepath.Join(t.TempDir(), "ran")
			args := []string{cmd, "--nodes", addrs, "--node-timeout", "2s", "--wait", wait}
			if cmd == "run" {
				args = append(args, "free", "--", "touch", marker)
			} else {
				args = append(args, "--for", "1ms", "free")
			}
			r := invoke(t, "", args...)
			if r.code != 0 || cmd == "run" && !fileExists(marker) || cmd == "hold" && r.stdout == "" {
				t.Errorf("%s --wait %s on a free lock: want it held (exit 0), got %v", cmd, wait, r)
			}
		}
	}
}
