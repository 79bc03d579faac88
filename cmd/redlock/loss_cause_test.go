//go:build unix

package main

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestLossNamesCause takes PEXPIRE, which the extension script calls, from
// the ACL user of run and hold once they hold the lock: every extension
// fails with an error retrying cannot fix, the lock expires, and the command
// said only that it lost the lock; why was on stderr with -v only. The line
// that tells the loss (run's, as it sends SIGTERM; hold's, as it exits) now
// says how it was lost and names each node with its error, NOPERM, through
// every driver, without -v, without the password or the lock's value.
func TestLossNamesCause(t *testing.T) {
	t.Parallel()
	const password = "nopexpire-Passw0rd"
	servers, _ := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		for _, cmd := range []string{"run", "hold"} {
			t.Run(d+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				user, key := "nopexpire-"+d+"-"+cmd, "lost-"+d+"-"+cmd
				urls := setUser(t, servers, user, password)
				// Extended every 2s, expired 6s after the last
				// extension: time enough for the ACL change.
				args := []string{"--driver", d, "--ttl", "6s", "--nodes", strings.Join(urls, ","), key}
				var b *background
				if cmd == "run" {
					b = start(t, append(append([]string{"run"}, args...), "--", "sh", "-c", "echo held; exec sleep 60")...)
					b.waitLine("held", 30*time.Second)
				} else {
					b, _ = startHold(t, args...)
				}
				defer b.cmd.Process.Signal(syscall.SIGTERM)
				value, err := servers[0].Do(t.Context(), "GET", key)
				if s, ok := value.(string); err != nil || !ok || s == "" {
					t.Fatalf("GET %s = %v, %v: want the lock's value", key, value, err)
				}
				for _, s := range servers {
					if _, err := s.Do(t.Context(), "ACL", "SETUSER", user, "-pexpire"); err != nil {
						t.Fatal(err)
					}
				}
				if code := b.wait(60 * time.Second); code != exitLockLost {
					t.Fatalf("%s whose user lost PEXPIRE: exit %d, want %d; stderr:\n%s", cmd, code, exitLockLost, b.stderr.String())
				}
				out := b.stderr.String()
				told := "redlock: hold: the lock \"" + key + "\" was lost: "
				if cmd == "run" {
					told = "redlock: run: lost the lock \"" + key + "\" while sh ran; sending it SIGTERM"
				}
				var line string
				for l := range strings.Lines(out) {
					if strings.HasPrefix(l, told) {
						line = l
					}
				}
				if line == "" {
					t.Fatalf("no line %q...; stderr:\n%s", told, out)
				}
				for _, want := range append([]string{"its validity ran out before an extension succeeded", "answered NOPERM, which retrying cannot fix", "can't run this command"}, redistest.Addrs(servers)...) {
					if !strings.Contains(line, want) {
						t.Errorf("the loss's line does not say %q:\n%s", want, line)
					}
				}
				if strings.Contains(out, password) || strings.Contains(out, value.(string)) {
					t.Errorf("stderr shows the password or the lock's value %q:\n%s", value, out)
				}
				if n := strings.Count(out, "NOPERM"); n != 1 {
					t.Errorf("the cause told %d times, want once:\n%s", n, out)
				}
			})
		}
	}
}

// TestLossCauseGroupsNodes: lossCause puts the nodes with one error
// together, those retrying cannot fix first, each error on one line with
// its control characters escaped, tells it once, and leaves out the calls
// that Do's end canceled.
func TestLossCauseGroupsNodes(t *testing.T) {
	e := &lockEvents{}
	for _, c := range []redlock.NodeCall{
		{Node: "n1", Err: errors.New("i/o timeout")},
		{Node: "n2", Err: errors.New("READONLY You can't write against a read only replica.\n\x1b[2J")},
		{Node: "n3", Err: errors.New("READONLY You can't write against a read only replica.\n\x1b[2J")},
		{Node: "n4", Err: errors.New("i/o timeout")},
		{Node: "n4", OK: true},
		{Node: "n5", Err: context.Canceled},
	} {
		c.Operation = redlock.OpExtend
		e.NodeCall(t.Context(), c)
	}
	e.LockEnd(t.Context(), redlock.LockEnd{Key: "k", How: redlock.EndExpired})
	want := `its validity ran out before an extension succeeded; ` +
		`the last extension on n2, n3 answered READONLY, which retrying cannot fix (see redlock doctor): READONLY You can't write against a read only replica.\n\x1b[2J; ` +
		`the last extension on n1 failed: i/o timeout`
	if got := e.lossCause(); got != want {
		t.Errorf("lossCause() =\n%s\nwant\n%s", got, want)
	}
	if got := e.lossCause(); got != "" {
		t.Errorf("lossCause() again = %q, want \"\": told once", got)
	}
}
