//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/stopsignal"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
)

// TestTerminated: a run stopped by SIGTERM (kill's default, a CI job's
// timeout, a container's stop) ends as an interrupt does: its test binaries
// and servers stopped, its temporary directory (the built test binaries, 17
// MB) removed, exit 1. With only os.Interrupt among the signals, the process
// died of it and left the directory behind. The test sends SIGTERM to its own
// process once the run builds the suite, under main's context (stopsignal.Context): without
// SIGTERM among stopsignal.Signals the test binary dies of it.
func TestTerminated(t *testing.T) {
	redistest.NewServer(t) // skips, or fails in CI, without redis-server
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, stop := stopsignal.Context()
	defer stop()
	var stdout bytes.Buffer
	stderr := new(syncbuf.Buffer)
	building := stderr.Seen("building the benchmarks")
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-bench", "^BenchmarkLock$", "-benchtime", "1x", "-rounds", "1", "-no-peers", "-out", "-"}, &stdout, stderr)
	}()
	select {
	case <-building:
	case code := <-done:
		t.Fatalf("benchrun ended before it built the suite: exit %d\nstderr:\n%s", code, stderr)
	case <-time.After(time.Minute):
		t.Fatalf("benchrun did not build the suite within a minute\nstderr:\n%s", stderr)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("benchrun after SIGTERM: exit %d, want 1\nstderr:\n%s", code, stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("benchrun still running a minute after SIGTERM")
	}
	if ctx.Err() == nil {
		t.Error("stopsignal.Context's context still open after SIGTERM")
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "benchrun-*"))
	if len(left) > 0 {
		t.Errorf("benchrun left %v after SIGTERM", left)
	}
}
