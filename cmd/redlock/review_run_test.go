//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
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

// An extension that Do cancels because CMD exited while it was in flight
// (the library's error then matches context.Canceled), or that finds the
// lock released already, is no failure of the lock: -v does not say that
// extending failed and is retried while run is releasing the lock.
func TestVerboseExtensionCanceledAtRelease(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("redlock: Do released the lock while its extension was in flight: %w", context.Canceled),
		redlock.ErrAlreadyUnlocked,
	} {
		var stderr bytes.Buffer
		e := &lockEvents{verbose: true, stderr: &stderr}
		_, end := e.Extend(context.Background(), redlock.ExtendStart{Key: "k"})
		end(redlock.ExtendDone{Key: "k", Votes: redlock.Votes{Nodes: 3, Quorum: 2, Granted: 2}, Until: time.Now().Add(time.Second), Err: err})
		if stderr.Len() != 0 {
			t.Errorf("-v, an extension that ended with %q: want nothing said, got:\n%s", err, stderr.String())
		}
	}
}
