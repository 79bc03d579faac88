//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Without --fencing, CMD gets no REDLOCK_TOKEN, even one in run's own
// environment (an outer run's, say): it would take another lock's token for
// this one's.
func TestRunDropsForeignToken(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	r := invokeEnv(t, []string{tokenEnv + "=999"}, "", "run", "--nodes", addrs, "--key", "k", "--", "sh", "-c", `echo "${REDLOCK_TOKEN-unset}"`)
	if r.code != 0 || r.stdout != "unset\n" {
		t.Errorf("REDLOCK_TOKEN=999 in run's environment, no --fencing: want CMD without it, got %v", r)
	}
	r = invokeEnv(t, []string{tokenEnv + "=999"}, "", "run", "--nodes", addrs, "--key", "k", "--fencing", "--", "sh", "-c", `echo "$REDLOCK_TOKEN"`)
	if r.code != 0 || r.stdout == "999\n" || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("REDLOCK_TOKEN=999 in run's environment, --fencing: want the lock's token, got %v", r)
	}
}

// A file the kernel cannot execute because it has no #! line runs with
// /bin/sh, as execvp(3) (and flock(1)) run it.
func TestRunScriptWithoutShebang(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	script := filepath.Join(t.TempDir(), "noshebang")
	if err := os.WriteFile(script, []byte("echo \"hi $1\"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := invoke(t, "", "run", "--nodes", addrs, "--key", "k", "--", script, "there")
	if r.code != 3 || r.stdout != "hi there\n" {
		t.Errorf("a script without #!: want it run by /bin/sh (hi there, exit 3), got %v", r)
	}
}

// hold whose stdout is a pipe nobody reads any more does not die of SIGPIPE
// with its lock held for a TTL: it exits with 1, and the lock is free at once.
func TestHoldClosedStdoutReleases(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // the reader is gone before hold writes its line
	cmd := command(t.Context(), "hold", "--nodes", addrs, "--ttl", "30s", "--for", "20s", "piped")
	cmd.Stdout = pw
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("hold with a closed stdout still runs after 15s; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
		t.Errorf("hold with a closed stdout: want exit %d, got %v; stderr:\n%s", exitFailure, err, stderr.String())
	}
	// --node-timeout 2s: with the default 200ms, a loaded machine's
	// servers answered too late for the one attempt (exit 69).
	r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "--wait", "0", "--key", "piped", "--", "true")
	if r.code != 0 {
		t.Errorf("the lock after hold failed to write its line: want it free (exit 0), got %v", r)
	}
}

// Usage errors found since TestUsageErrors: exit 2 with what was wrong.
func TestUsageErrorsKeysAndStatus(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 5000)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run with a key too long", []string{"run", "--nodes", "127.0.0.1:1", long, "--", "true"}, "longer than"},
		{"hold with a key too long", []string{"hold", "--nodes", "127.0.0.1:1", long}, "longer than"},
		{"run with a prefix too long", []string{"run", "--nodes", "127.0.0.1:1", "--prefix", long, "k", "--", "true"}, "prefix"},
		{"status with an address twice", []string{"status", "--nodes", "127.0.0.1:1,127.0.0.1:1", "k"}, "same node"},
		{"status with a CA file missing", []string{"status", "--nodes", "rediss://127.0.0.1:1?tls_ca_file=/no/such/ca.pem", "k"}, "ca.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, "", tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("redlock %.80s: want exit 2 and %q on stderr, got %v", strings.Join(tc.args, " "), tc.want, r)
			}
		})
	}
}
