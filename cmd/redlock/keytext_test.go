//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A plain key is printed as it is; one that would not show as itself on one
// line is quoted as strconv.Quote quotes it, and so is one that begins with
// a double quote, which would otherwise pass for a quoted key.
func TestKeyText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, want string }{
		{"deploy", "deploy"},
		{"lock:{user1}:report", "lock:{user1}:report"},
		{"with space", "with space"},
		{`back\slash`, `back\slash`},
		{`a"b`, `a"b`},
		{"clé", "clé"},
		{"a\nb", `"a\nb"`},
		{"a\r\nb", `"a\r\nb"`},
		{"tab\there", `"tab\there"`},
		{"esc\x1b[31m", `"esc\x1b[31m"`},
		{"nul\x00", `"nul\x00"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"line\u2028sep", `"line\u2028sep"`},
		{`"quoted"`, `"\"quoted\""`},
		{"", `""`},
		{"\uFFFD", "\uFFFD"},
	} {
		if got := keyText(tc.key); got != tc.want {
			t.Errorf("keyText(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// checkOneLinePerMessage fails unless every line of stderr is one of the
// command's messages, each beginning "redlock: ": a key printed raw with a
// newline would start a line of its own.
func checkOneLinePerMessage(t *testing.T, what, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(line, "redlock: ") {
			t.Errorf("%s: the line %q of stderr is not one of redlock's messages: a key split it?\n%s", what, line, stderr)
		}
	}
}

// TestStatusKeyOnOneLine: status shows a key with a newline or a tab on one
// row of its table and of its verdicts, quoted, and a plain key as it is;
// --json gives every key as it is.
func TestStatusKeyOnOneLine(t *testing.T) {
	t.Parallel()
	servers, addrs := nodes(t, 3)
	for _, s := range servers {
		if _, err := s.Do(t.Context(), "SET", "two\nlines", "v", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"two\nlines", "tab\there", "plain"}
	shown := []string{`"two\nlines"`, `"tab\there"`, "plain"}
	r := invoke(t, "", append([]string{"status", "--nodes", addrs}, keys...)...)
	if r.code != 0 {
		t.Fatalf("status: %v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if want := 1 + len(keys)*len(servers) + 1 + len(keys); len(lines) != want {
		t.Fatalf("status printed %d lines, want %d (a header, a row per key and node, a blank line, a verdict per key):\n%s", len(lines), want, r.stdout)
	}
	for i, k := range shown {
		for n := range servers {
			row := lines[1+i*len(servers)+n]
			if !strings.HasPrefix(row, k+"  ") || !strings.Contains(row, servers[n].Addr()) {
				t.Errorf("status's row of %q on %s: %q, want it to begin with %s", keys[i], servers[n].Addr(), row, k)
			}
		}
		state := "free"
		if i == 0 {
			state = "held"
		}
		if verdict := lines[2+len(keys)*len(servers)+i]; !strings.HasPrefix(verdict, k+": "+state+": ") {
			t.Errorf("status's verdict on %q: %q, want it to begin with %s: %s: ", keys[i], verdict, k, state)
		}
	}

	r = invoke(t, "", append([]string{"status", "--nodes", addrs, "--json"}, keys...)...)
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("status --json: %v\n%v", err, r)
	}
	for i, kr := range rep.Keys {
		if kr.Key != keys[i] {
			t.Errorf("status --json: key %d is %q, want %q", i, kr.Key, keys[i])
		}
	}
}

// TestVerboseKeyOnOneLine: -v tells of a key with a newline on one line,
// quoted: the wait, the grant, the loss. The lock is taken on in-process
// memory nodes.
func TestVerboseKeyOnOneLine(t *testing.T) {
	t.Parallel()
	const key = "two\nlines"
	addrs := []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}
	o := func(wait time.Duration) *lockFlags {
		return &lockFlags{nodeFlags: nodeFlags{nodes: strings.Join(addrs, ","), driver: "memory"}, key: key, ttl: 10 * time.Second,
			verbose: true, wait: wait, waitSet: wait > 0, conflictCode: exitConflict}
	}

	// Held elsewhere: the wait is told, and the verdict.
	c, err := redlock.Open("memory", addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.TryLock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err = withLock(context.Background(), "run", o(20*time.Millisecond), &stderr, nil, func(context.Context, heldLock) error { return nil })
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitConflict {
		t.Fatalf("run -v --wait 20ms on a held key: want exit %d, got %v", exitConflict, err)
	}
	if !strings.Contains(stderr.String(), `waiting for "two\nlines" (held elsewhere`) {
		t.Errorf("run -v does not tell the wait for the key, quoted:\n%s", stderr.String())
	}
	checkOneLinePerMessage(t, "run -v on a held key", stderr.String())
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Granted, then gone from every node: the grant and the loss. (From
	// every one: Do returns once a quorum granted, and the SET of the third
	// node may land after a deletion.)
	stderr.Reset()
	err = withLock(context.Background(), "run", o(0), &stderr, nil, func(context.Context, heldLock) error {
		for _, a := range addrs {
			n, err := memory.Open(a)
			if err != nil {
				return err
			}
			n.Delete(key)
		}
		return nil
	})
	if !errors.As(err, &ee) || ee.code != exitLockLost {
		t.Fatalf("run -v whose key was gone at the release: want exit %d, got %v", exitLockLost, err)
	}
	s := stderr.String()
	for _, want := range []string{`acquired "two\nlines" after`, `lost "two\nlines" after holding it for`} {
		if !strings.Contains(s, want) {
			t.Errorf("run -v does not say %q:\n%s", want, s)
		}
	}
	checkOneLinePerMessage(t, "run -v losing the lock", s)
}

// TestHoldAndRunVerboseKeyOnOneLine: run -v and hold -v, as the user runs
// them, tell of a key with a newline on one line, quoted, from the grant to
// the release.
func TestHoldAndRunVerboseKeyOnOneLine(t *testing.T) {
	t.Parallel()
	_, addrs := nodes(t, 3)
	r := invoke(t, "", "run", "-v", "--nodes", addrs, "two\nlines", "--", "true")
	if r.code != 0 {
		t.Fatalf("run -v: %v", r)
	}
	for _, want := range []string{`acquired "two\nlines" after`, `released "two\nlines"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("run -v does not say %q:\n%s", want, r.stderr)
		}
	}
	checkOneLinePerMessage(t, "run -v", r.stderr)

	holder, h := startHold(t, "-v", "--nodes", addrs, "two\nlines")
	if h.Key != "two\nlines" {
		t.Errorf("hold's line names the key %q, want %q", h.Key, "two\nlines")
	}
	holder.cmd.Process.Signal(syscall.SIGTERM)
	if code := holder.wait(30 * time.Second); code != 0 {
		t.Fatalf("hold after SIGTERM: exit %d, want 0; stderr:\n%s", code, holder.stderr.String())
	}
	s := holder.stderr.String()
	for _, want := range []string{`acquired "two\nlines" after`, `hold: terminated: releasing "two\nlines"`, `released "two\nlines"`} {
		if !strings.Contains(s, want) {
			t.Errorf("hold -v does not say %q:\n%s", want, s)
		}
	}
	checkOneLinePerMessage(t, "hold -v", s)
}

// TestDoctorKeyOnOneLine: doctor checks permissions on a --key with a
// newline, which a user may not touch. The server's denial names the key
// as it is; the report shows it on the check's line, the newline escaped.
func TestDoctorKeyOnOneLine(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	s := redistest.NewServer(t)
	if _, err := s.Do(t.Context(), "ACL", "SETUSER", "xonly", "on", ">"+password, "~x*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	r := invoke(t, "", "doctor", "--nodes", "redis://xonly:"+password+"@"+s.Addr(), "--key", "two\nlines")
	if r.code != exitFailure {
		t.Fatalf("doctor for a user who may not touch --key: want exit 1, got %v", r)
	}
	if strings.Contains(r.stdout, "two\nlines") {
		t.Errorf("doctor printed the key with its newline, across two lines:\n%s", r.stdout)
	}
	var line string
	for l := range strings.SplitSeq(r.stdout, "\n") {
		if strings.Contains(l, "may not run what every lock needs") {
			line = l
		}
	}
	if !strings.Contains(line, `on "two\nlines": SET (`) || !strings.Contains(line, `'two\nlines'`) {
		t.Errorf("doctor's failed permissions check does not name the key, escaped, on its line %q:\n%s", line, r.stdout)
	}
}

// escapeUnprintable escapes what would not show as itself, and leaves the
// rest of a server's words, quotes and backslashes included, as they are.
func TestEscapeUnprintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"NOPERM this user has no permissions", "NOPERM this user has no permissions"},
		{`the 'a"b\c' key`, `the 'a"b\c' key`},
		{"the 'two\nlines' key", `the 'two\nlines' key`},
		{"tab\there \x00\xff é \u2028", `tab\there \x00\xff é \u2028`},
		{"\uFFFD", "\uFFFD"},
	} {
		if got := escapeUnprintable(tc.text); got != tc.want {
			t.Errorf("escapeUnprintable(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
