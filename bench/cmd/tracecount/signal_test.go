//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/syncbuf"
)

// TestTerminatedRemovesTemp: tracecount stopped by SIGTERM (kill's default,
// a CI job's timeout) or Ctrl-C while it works ends with exit 1 after
// removing its temporary directory (the built bench.test, 17 MB, and the
// traces), as the benchmark runner does. Run under context.Background, the
// command died of the signal and left the directory behind. The command is
// built and run as a process of its own, and signalled once its temporary
// directory exists (it then builds the suite with go test -c).
func TestTerminatedRemovesTemp(t *testing.T) {
	bin := buildCommand(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd := exec.Command(bin)
			cmd.Dir = "../.." // bench/, where the command builds the suite
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			stderr := new(syncbuf.Buffer)
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.After(time.Minute)
			for {
				if left, _ := filepath.Glob(filepath.Join(tmp, "tracecount-*")); len(left) > 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("tracecount ended before it made its temporary directory: %v\n%s", err, stderr.String())
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatal("tracecount made no temporary directory within a minute")
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("tracecount after %v: %v, want exit status 1\nstderr:\n%s", sig, err, stderr.String())
				}
				if want := "tracecount: stopped (" + sig.String() + " signal received): "; !strings.Contains(stderr.String(), want) {
					t.Errorf("tracecount after %v: stderr does not say why it stopped (%q):\n%s", sig, want, stderr.String())
				}
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("tracecount still running a minute after %v", sig)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "tracecount-*")); len(left) > 0 {
				t.Errorf("tracecount left %v after %v", left, sig)
			}
		})
	}
}
