//go:build unix

package main

import (
	"syscall"
	"testing"
	"time"
)

// TestSIGUSR pins what the README says of SIGUSR1 and SIGUSR2: hold ignores
// them, holding (it exits 0 on the SIGTERM sent after them, releasing the
// lock, not 128+N), and run ends its wait for the lock on either, with
// 128+N, CMD never started.
func TestSIGUSR(t *testing.T) {
	t.Parallel()
	_, nodeList := nodes(t, 3)
	key := "sigusr"
	holder, _ := startHold(t, "--nodes", nodeList, key)
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2} {
		if err := holder.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		// run waits for the lock that hold holds, until the signal.
		waiter := start(t, "run", "-v", "--nodes", nodeList, key, "--", "sh", "-c", "echo ran")
		waitStderr(t, waiter, "redlock: waiting for "+key, 30*time.Second)
		waiter.cmd.Process.Signal(sig)
		if code := waiter.wait(30 * time.Second); code != 128+int(sig) {
			t.Errorf("run waiting for the lock, sent %v: exit %d, want %d; stderr:\n%s", sig, code, 128+int(sig), waiter.stderr.String())
		}
		if line, ok := <-waiter.lines; ok {
			t.Errorf("CMD ran (%q) though %v ended the wait", line, sig)
		}
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold sent SIGUSR1, SIGUSR2, then SIGTERM: exit %d, want 0 (SIGUSR1 and SIGUSR2 ignored); stderr:\n%s", code, holder.stderr.String())
	}
}
