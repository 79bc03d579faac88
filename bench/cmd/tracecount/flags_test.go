package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadArgs: an argument that is no flag, or a -bench that is not a
// regular expression, is refused at once (exit 2, naming it), as the
// benchmark runner refuses them, rather than found after the suite was
// built (an invalid pattern: exit 1 from the test binary) or not at all (an
// argument, such as a benchmark's name given without -bench, was ignored and
// the default benchmark traced).
func TestBadArgs(t *testing.T) {
	bin := buildCommand(t)
	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{"Far"}, `"Far"`},
		{[]string{"-n", "10", "extra"}, `"extra"`},
		{[]string{"-bench", "["}, "-bench"},
		{[]string{"-bench", "Far/(goredis"}, "-bench"},
		{[]string{"-bench", "[]/]"}, "-bench"}, // compiles whole, not as go test splits it
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, tc.args...)
		cmd.Dir = "../.." // bench/
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.name) {
			t.Errorf("tracecount %q: %v, stderr %q; want exit 2 at once, naming %s", tc.args, err, &stderr, tc.name)
		}
	}
}

// buildCommand builds the command into a temporary directory and returns its
// path; it skips under -short, since the tests that run it run long.
func buildCommand(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the command and runs it")
	}
	bin := filepath.Join(t.TempDir(), "tracecount")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
