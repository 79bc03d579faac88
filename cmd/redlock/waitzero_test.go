//go:build unix

package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run --wait 0 and hold --wait 0 on a key held elsewhere say so in the
// command's words, as --wait 0 (one attempt), not as the library's option
// that makes it so (WithMaxAttempts), which the shell user never set; the
// exit code stays 75.
func TestWaitZeroMessage(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	holder := start(t, "run", "--nodes", addrs, "--key", "busy", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)
	// A generous node timeout: on a loaded machine, a node slower than the
	// default 200ms counts as failed, and the verdict would be 69.
	for _, args := range [][]string{
		{"run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy", "--", "true"},
		{"hold", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "busy"},
		{"run", "-v", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--conflict-exit-code", "0", "busy", "--", "true"},
	} {
		r := invoke(t, "", args...)
		want := exitConflict
		if strings.Contains(strings.Join(args, " "), "--conflict-exit-code 0") {
			want = 0
		}
		if r.code != want {
			t.Errorf("redlock %s: want exit %d, got %v", strings.Join(args, " "), want, r)
			continue
		}
		if strings.Contains(r.stderr, "WithMaxAttempts") || strings.Contains(r.stderr, "gave up after") {
			t.Errorf("redlock %s names the library's option:\n%s", strings.Join(args, " "), r.stderr)
		}
		if !strings.Contains(r.stderr, `lock "busy" not obtained: held elsewhere (--wait 0: one attempt):`) {
			t.Errorf("redlock %s does not say the key is held, in one attempt:\n%s", strings.Join(args, " "), r.stderr)
		}
	}
}

// The help of run, hold and status speaks to a shell user: it names no
// option, function or error of the Go library (redlock.WithKeyPrefix was
// --prefix's help; status named its counters' keys as driver.FenceKey and
// driver.LegacyFenceKey), which that user never sees.
func TestLockHelpNamesNoLibraryAPI(t *testing.T) {
	t.Parallel()
	library := regexp.MustCompile(`(redlock|driver)\.[A-Z]\w*|\bWith[A-Z]\w*|\bErr[A-Z]\w*|Client\.Do`)
	for _, sub := range []string{"run", "hold", "status"} {
		r := invoke(t, "", sub, "--help")
		if r.code != 0 {
			t.Fatalf("redlock %s --help: %v", sub, r)
		}
		if m := library.FindAllString(r.stdout, -1); m != nil {
			t.Errorf("redlock %s --help names the library's %q", sub, m)
		}
	}
}

// A signal that ends hold's wait for the lock leaves stdout without a line
// (a script reading it sees EOF, not a lock), and says on stderr that the
// wait ended and the lock was not held; hold exits with 128 + the signal.
func TestHoldSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	holder := start(t, "run", "--nodes", addrs, "--key", "k", "--", "sh", "-c", "echo held; exec sleep 60")
	holder.waitLine("held", 30*time.Second)
	// A generous node timeout: see waitForWaiter.
	waiter := start(t, "hold", "--nodes", addrs, "--node-timeout", "2s", "k")
	waitForWaiter(t, servers, "k")
	if err := waiter.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := waiter.wait(30 * time.Second); code != exitSignalBase+int(syscall.SIGINT) {
		t.Fatalf("hold after SIGINT: exit %d, want %d; stderr:\n%s", code, exitSignalBase+int(syscall.SIGINT), waiter.stderr.String())
	}
	for line := range waiter.lines {
		t.Errorf("hold interrupted while waiting printed %q on stdout", line)
	}
	if !strings.Contains(waiter.stderr.String(), `while waiting for the lock "k"; it was not held`) {
		t.Errorf("hold interrupted while waiting: stderr does not say so:\n%s", waiter.stderr.String())
	}
}
