//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/stopsignal"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redistest"
)

// termWhen runs the command with args under main's context
// (stopsignal.Context), with TMPDIR set to tmp, sends SIGTERM to the test
// process once its stderr shows seen, within wait, and returns its exit
// code and output. It skips, or fails in CI, without redis-server.
func termWhen(t *testing.T, tmp, seen string, wait time.Duration, args ...string) (code int, stdout string, stderr *syncbuf.Buffer) {
	t.Helper()
	redistest.NewServer(t)
	t.Setenv("TMPDIR", tmp)
	ctx, stop := stopsignal.Context()
	defer stop()
	var out bytes.Buffer
	stderr = new(syncbuf.Buffer)
	shown := stderr.Seen(seen)
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, stderr) }()
	select {
	case <-shown:
	case code := <-done:
		t.Fatalf("benchrun ended before it wrote %q: exit %d\nstderr:\n%s", seen, code, stderr)
	case <-time.After(wait):
		t.Fatalf("benchrun did not write %q within %v\nstderr:\n%s", seen, wait, stderr)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code = <-done:
	case <-time.After(time.Minute):
		t.Fatal("benchrun still running a minute after SIGTERM")
	}
	if ctx.Err() == nil {
		t.Error("stopsignal.Context's context still open after SIGTERM")
	}
	return code, out.String(), stderr
}

// TestTerminated: a run stopped by SIGTERM (kill's default, a CI job's
// timeout, a container's stop) ends as an interrupt does: its test binaries
// and servers stopped, its temporary directory (the built test binaries, 17
// MB) removed, exit 1. With only os.Interrupt among the signals, the process
// died of it and left the directory behind. The test sends SIGTERM to its own
// process once the run builds the suite, under main's context (stopsignal.Context): without
// SIGTERM among stopsignal's signals the test binary dies of it.
func TestTerminated(t *testing.T) {
	tmp := t.TempDir()
	code, _, stderr := termWhen(t, tmp, "building the benchmarks", time.Minute,
		"-bench", "^BenchmarkLock$", "-benchtime", "1x", "-rounds", "1", "-no-peers", "-out", "-")
	if code != 1 {
		t.Errorf("benchrun after SIGTERM: exit %d, want 1\nstderr:\n%s", code, stderr)
	}
	if want := "benchrun: stopped (terminated signal received) before any run was made: "; !strings.Contains(stderr.String(), want) {
		t.Errorf("benchrun after SIGTERM: stderr does not say why it stopped (%q):\n%s", want, stderr)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "benchrun-*"))
	if len(left) > 0 {
		t.Errorf("benchrun left %v after SIGTERM", left)
	}
}
