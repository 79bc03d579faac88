//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotObtainedSaysItOnce: the message of a lock not obtained, and the
// line that says run keeps waiting while too many nodes fail, give the
// votes and the nodes' errors after their own words; they printed the
// library's "redlock: lock not obtained" on a line of its own between them
// ("lock "k" not obtained: held elsewhere:", "redlock: lock not obtained",
// "0 of 3 nodes agreed, ..."), and the waiting line ran on into it
// ("no quorum possible): redlock: lock not obtained").
func TestNotObtainedSaysItOnce(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	holder, _ := startHold(t, "--nodes", addrs, "busy")
	defer holder.term()
	for _, args := range [][]string{
		{"run", "--wait", "0", "--ttl", "1m", "--node-timeout", "5s", "--nodes", addrs, "busy", "--", "true"},
		{"run", "--wait", "300ms", "--ttl", "1m", "--node-timeout", "5s", "--nodes", addrs, "busy", "--", "true"},
		{"hold", "--wait", "0", "--ttl", "1m", "--node-timeout", "5s", "--nodes", addrs, "busy"},
	} {
		r := invoke(t, "", args...)
		if r.code != exitConflict || strings.Contains(r.stderr, "redlock: lock not obtained") ||
			!strings.Contains(r.stderr, "not obtained") || !strings.Contains(r.stderr, "0 of 3 nodes agreed, 2 needed (") {
			t.Errorf("redlock %s: want exit %d and the votes once after \"not obtained\", got %v", strings.Join(args, " "), exitConflict, r)
		}
	}
	// Two nodes of three down: run says once that it keeps waiting, and
	// --wait ends the wait (its verdict is that of the last attempt that
	// finished: the live node may refuse a key being released there, see
	// TestExitUnavailable).
	down, downAddrs := nodes(t, 3)
	down[1].Kill()
	down[2].Kill()
	r := invoke(t, "", "run", "--wait", "0", "--ttl", "1m", "--node-timeout", "5s", "--nodes", downAddrs, "free", "--", "true")
	if r.code != exitUnavailable || strings.Contains(r.stderr, "redlock: lock not obtained") ||
		!strings.Contains(r.stderr, " of 3 nodes agreed, 2 needed (0 refused, 2 failed)") {
		t.Errorf("run --wait 0 with 2 nodes of 3 down: want exit %d and the votes once after \"not obtained\", got %v", exitUnavailable, r)
	}
	r = invoke(t, "", "run", "--wait", "300ms", "--ttl", "1m", "--node-timeout", "5s", "--nodes", downAddrs, "free", "--", "true")
	if strings.Contains(r.stderr, "redlock: lock not obtained") || !strings.Contains(r.stderr, "no quorum possible):\n") {
		t.Errorf("run --wait 300ms with 2 nodes of 3 down: want the waiting line, then the votes on a line of their own, got %v", r)
	}
}

// TestRunBadInterpreter: a script whose #! line names a program that does
// not exist (the classic: CRLF line ends, "#!/bin/sh\r") exits with 126
// before run takes the lock, and the message quotes the line. run took the
// lock, then exec failed with "fork/exec ./job.sh: no such file or
// directory", of a file that exists.
func TestRunBadInterpreter(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"crlf.sh":    "#!/bin/sh\r\necho ran\r\n",
		"missing.sh": "#! " + filepath.Join(dir, "no-such-shell") + " -e\necho ran\n",
	} {
		script := filepath.Join(dir, name)
		if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		line, _, _ := strings.Cut(text, "\n")
		r := invoke(t, "", "run", "-v", "--nodes", addrs, "k", "--", script)
		if r.code != exitCannotExec || !strings.Contains(r.stderr, "bad interpreter") ||
			!strings.Contains(r.stderr, strings.ReplaceAll(line, "\r", `\r`)) || strings.Contains(r.stderr, "acquired") || r.stdout != "" {
			t.Errorf("run %s (first line %q): want exit %d, the line quoted, and no lock taken (no \"acquired\" with -v), got %v",
				name, line, exitCannotExec, r)
		}
	}
}
