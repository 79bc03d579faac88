package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/bench/benchrun"
	"github.com/go-redlock/redlock/redistest"
)

// TestBadFlags: benchrun.Config reads a zero or a negative value as its
// default, so the command refuses one, naming the flag, rather than run
// another benchmark than the one asked for (-rounds 0 ran three rounds, a
// half-hour run), and a benchtime that go test would refuse only after the
// servers started and the benchmarks were built. Each case also names -from
// a file that does not exist: a flag taken for good makes the command fail
// there (exit 1) instead of running the suite.
func TestBadFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, tc := range []struct {
		args []string
		name string // what the message names
	}{
		{[]string{"-rounds", "0"}, "-rounds"}, {[]string{"-rounds", "-2"}, "-rounds"},
		{[]string{"-scale-locks", "0"}, "-scale-locks"}, {[]string{"-scale-locks", "-5"}, "-scale-locks"},
		{[]string{"-scale-for", "0"}, "-scale-for"}, {[]string{"-scale-for", "-1s"}, "-scale-for"},
		{[]string{"-benchtime", "0x"}, "-benchtime"}, {[]string{"-benchtime", "bogus"}, "-benchtime"},
		{[]string{"-benchtime", ""}, "-benchtime"}, {[]string{"-handoff-benchtime", "-1s"}, "-handoff-benchtime"},
		{[]string{"-quick", "-rounds", "0"}, "-rounds"},
		{[]string{"extra"}, "extra"}, {[]string{"-no-such-flag"}, "no-such-flag"},
		{[]string{"-out", filepath.Join(missing, "dir")}, "-out"}, {[]string{"-out", missing}, "-out"},
		{[]string{"-json", filepath.Join(missing, "r.json")}, "-json"},
		{[]string{"-bench", "["}, "-bench"}, {[]string{"-bench", "Lock/(nodes=5"}, "-bench"},
		// Patterns that compile whole, but not each part go test splits
		// them into ("[]" and "]"; "\Q" and "\E").
		{[]string{"-bench", "[]/]"}, "-bench"}, {[]string{"-bench", `\Q/\E`}, "-bench"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"-from", missing, "-out", "-"}, tc.args...), &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.name) {
			t.Errorf("benchrun %q: exit %d, stdout %q, stderr %q; want 2, a message naming %s and no report", tc.args, code, &stdout, &stderr, tc.name)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "-rounds") {
		t.Errorf("benchrun -h: exit %d, stderr %q; want 0 and the flags", code, &stderr)
	}
}

// TestJSONFailureKeepsReport: a -json file that cannot be written fails the
// command (exit 1), but the report is still printed and its files written:
// a run takes half an hour, and it was lost (nothing printed, nothing
// written) for a mistyped -json path. (A -json in a directory that does not
// exist is refused before the run: TestBadFlags; here the file is a
// directory.)
func TestJSONFailureKeepsReport(t *testing.T) {
	dir := t.TempDir()
	data, err := json.Marshal(&benchrun.Report{Config: benchrun.Config{Rounds: 1}})
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(dir, "in.json")
	if err := os.WriteFile(from, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-from", from, "-json", out, "-out", out}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "-json") {
		t.Errorf("exit %d, stderr %q; want 1 and the -json error", code, &stderr)
	}
	if !strings.HasPrefix(stdout.String(), "# Benchmark results") {
		t.Errorf("the report is not printed: stdout %q", &stdout)
	}
	for _, f := range []string{benchrun.ResultsFile, benchrun.ChartFile} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
}

// TestDirNotModule: a -dir outside the module is refused before any server
// starts, with the error prefixed once; it started five redis-server
// processes and built nothing ("benchrun: benchrun: go test -c in
// /tmp/bench: chdir /tmp/bench: no such file or directory").
func TestDirNotModule(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-dir", t.TempDir(), "-out", "-"}, &stdout, &stderr)
	msg := stderr.String()
	if code != 1 || !strings.Contains(msg, "is not inside the module") || strings.Contains(msg, "benchrun: benchrun:") || strings.Contains(msg, "starting") {
		t.Errorf("benchrun -dir (not the module): exit %d, stderr %q; want 1, the module not found, before any server starts, prefixed once", code, msg)
	}
}

// TestServerEnvNamed: with REDISTEST_SERVER naming no program, benchrun says
// so, rather than only that redis-server is not on PATH (where it was), and
// prints the install hint once: it printed the hint twice and dropped the
// variable (it wrapped redistest.ErrNotInstalled, not the error of the start).
func TestServerEnvNamed(t *testing.T) {
	const bad = "/nonexistent/redis-server"
	t.Setenv("REDISTEST_SERVER", bad)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-out", "-", "-no-peers", "-rounds", "1", "-benchtime", "1x"}, &stdout, &stderr)
	msg := stderr.String()
	if code != 1 || !strings.Contains(msg, `REDISTEST_SERVER="`+bad+`"`) || strings.Count(msg, redistest.InstallHint) != 1 || strings.Contains(msg, "not found on PATH") {
		t.Errorf("exit %d, stderr %q; want 1, the variable and its value named, the install hint once, and no 'not found on PATH'", code, msg)
	}
}
