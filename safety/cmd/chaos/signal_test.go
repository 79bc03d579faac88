//go:build unix

package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/stopsignal"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
)

// TestChaosTerminated: a soak stopped by SIGTERM (kill's default, a CI
// job's timeout, a container's stop) prints the report of what ran, as an
// interrupt does, rather than die without one. The test sends SIGTERM to its
// own process while the soak runs under main's context (stopsignal.Context): without
// SIGTERM among stopsignal's signals the test binary dies of it.
func TestChaosTerminated(t *testing.T) {
	redistest.NewServer(t) // skips, or fails in CI, without redis-server
	ctx, stop := stopsignal.Context()
	defer stop()
	var stdout bytes.Buffer
	stderr := new(syncbuf.Buffer)
	started := stderr.Seen("so far") // the first progress line
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-duration", "1m", "-nodes", "3", "-progress", "100ms"}, &stdout, stderr)
	}()
	// Once the soak runs (its first progress line), terminate it.
	select {
	case <-started:
	case code := <-done:
		t.Fatalf("chaos ended before its first progress line: exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("no progress line 30s after the start\nstderr:\n%s", stderr)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stdout.String(), "grants: ") || !strings.Contains(stdout.String(), "overlaps: 0") {
			t.Fatalf("chaos after SIGTERM: exit %d, want 0 and the report\nstdout:\n%s\nstderr:\n%s", code, &stdout, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chaos still running 30s after SIGTERM")
	}
	if ctx.Err() == nil {
		t.Error("stopsignal.Context's context still open after SIGTERM")
	}
}
