package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestChaos runs a short soak: it must finish, report, and find no overlap.
func TestChaos(t *testing.T) {
	redistest.NewServer(t) // skips, or fails in CI, without redis-server
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-duration", "1s", "-nodes", "3"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "overlaps: 0") || !strings.Contains(stdout.String(), "grants: ") {
		t.Fatalf("chaos -duration 1s: exit %d, want 0 with grants and no overlap\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
}

// TestChaosBadFlags exits 2 with a message for bad input.
func TestChaosBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-duration", "0s"}, {"-drivers", "nope"}, {"extra"}, {"-no-such-flag"}} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("chaos %q: exit %d, stderr %q; want 2 and a message", args, code, &stderr)
		}
	}
}

// TestChaosHelp: -h (or -help) prints the flags and exits 0, as the benchmark
// runner's does: asking for help is not a bad flag, and the command's doc
// keeps 2 for bad flags.
func TestChaosHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), []string{arg}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "-fault-every") {
			t.Errorf("chaos %s: exit %d, stderr %q; want 0 and the flags", arg, code, &stderr)
		}
	}
}

// TestChaosZeroFlags: chaos.Config reads a zero as its own default, which is
// not the command's (TTL 1s where -ttl shows 500ms, 5 nodes where -nodes
// says at least 3), so a zero given on the command line is refused, as
// -duration 0 is, rather than run a soak other than the one asked for. A bad
// Config's message is printed once prefixed, not "chaos: chaos: ...".
func TestChaosZeroFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nodes", "0"}, {"-contenders", "0"}, {"-ttl", "0"}, {"-node-timeout", "0"}, {"-fault-every", "0"},
		{"-progress", "0"}, {"-nodes", "2"}, {"-contenders", "-1"}, {"-node-timeout", "1h"}, {"-progress", "-1s"},
	} {
		var stdout, stderr bytes.Buffer
		// A short soak, should a bad flag be taken: the test fails, not hangs.
		code := run(t.Context(), append([]string{"-duration", "1s"}, args...), &stdout, &stderr)
		if code != 2 || stderr.Len() == 0 || stdout.Len() != 0 {
			t.Errorf("chaos %q: exit %d, stdout %q, stderr %q; want 2, a message and no report", args, code, &stdout, &stderr)
		}
		if strings.Contains(stderr.String(), "chaos: chaos:") {
			t.Errorf("chaos %q: the message is prefixed twice: %q", args, &stderr)
		}
	}
}

// TestChaosProgress: the soak tells how far it is while it runs, on
// stderr, so that a long soak is not silent until its report: a line per
// -progress interval with the grants, faults and overlaps so far.
func TestChaosProgress(t *testing.T) {
	redistest.NewServer(t) // skips, or fails in CI, without redis-server
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-duration", "2s", "-nodes", "3", "-progress", "250ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	lines := regexp.MustCompile(`(?m)^chaos: [0-9.]+m?s of 2s: [0-9]+ grants, [0-9]+ faults, 0 overlaps so far$`).FindAllString(stderr.String(), -1)
	if len(lines) < 2 {
		t.Errorf("%d progress lines on stderr, want one per 250ms of the 2s soak\nstderr:\n%s", len(lines), &stderr)
	}
	if strings.Contains(stdout.String(), "so far") {
		t.Errorf("progress on stdout, which holds the report:\n%s", &stdout)
	}
}
