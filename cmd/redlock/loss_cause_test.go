//go:build unix

package main

import (
	"context"
	"errors"
	"strconv"
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
				// A quorum holds the key: the first server may not
				// (its SET may be in flight still, or lost).
				value := valueOf(t, servers, key)
				takePexpire(t, user, servers...)
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
				for _, want := range []string{"refused by so many nodes with an error retrying cannot fix that no quorum could extend it, so it was given up at once", "answered NOPERM, which retrying cannot fix", "can't run this command"} {
					if !strings.Contains(line, want) {
						t.Errorf("the loss's line does not say %q:\n%s", want, line)
					}
				}
				// run tells the loss as soon as a quorum of the nodes
				// refused the extension, and the third may not have
				// answered yet; hold tells it once it released the lock.
				named := 0
				for _, a := range redistest.Addrs(servers) {
					if strings.Contains(line, a) {
						named++
					}
				}
				if want := map[string]int{"run": 2, "hold": 3}[cmd]; named < want {
					t.Errorf("the loss's line names %d of the nodes, want at least %d:\n%s", named, want, line)
				}
				if strings.Contains(out, password) || strings.Contains(out, value) {
					t.Errorf("stderr shows the password or the lock's value %q:\n%s", value, out)
				}
				if n := strings.Count(out, "NOPERM"); n != 1 {
					t.Errorf("the cause told %d times, want once:\n%s", n, out)
				}
			})
		}
	}
}

// TestPermanentExtendLossAtOnce takes PEXPIRE from the ACL user of hold -v
// once it holds the lock, as TestLossNamesCause does, with a TTL of 30s:
// the first extension, 10s after the grant, is refused by every node with
// NOPERM, which retrying cannot fix. hold retried it every 2.5s until the
// validity ended, 30s after the grant, working on meanwhile under a lock
// nothing could extend; it gives the lock up at that first extension now,
// exits with 76 naming the refusal, says lost once, and does not say
// released (its release removed a key that it no longer counted as
// held). The bound on the time held is generous (20s, against 10s now and
// 30s before) for a busy machine.
func TestPermanentExtendLossAtOnce(t *testing.T) {
	t.Parallel()
	const password = "nopexpire-Passw0rd"
	servers, _ := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			user, key := "atonce-"+d, "atonce-"+d
			b, _ := startHoldAs(t, servers, user, password, key, "-v", "--driver", d, "--ttl", "30s")
			defer b.cmd.Process.Signal(syscall.SIGTERM)
			takePexpire(t, user, servers...)
			if code := b.wait(60 * time.Second); code != exitLockLost {
				t.Fatalf("hold whose user lost PEXPIRE: exit %d, want %d; stderr:\n%s", code, exitLockLost, b.stderr.String())
			}
			out := b.stderr.String()
			lost := "redlock: lost " + key + " after holding it for "
			var held time.Duration
			for l := range strings.Lines(out) {
				if rest, ok := strings.CutPrefix(l, lost); ok {
					d, err := time.ParseDuration(strings.TrimSpace(rest))
					if err != nil {
						t.Fatalf("%q: %v", l, err)
					}
					held = d
				}
			}
			switch {
			case held == 0:
				t.Fatalf("no line %q...; stderr:\n%s", lost, out)
			case held > 20*time.Second:
				t.Errorf("lost %v after the grant, want at the first extension (10s), not at the validity's end (30s):\n%s", held, out)
			}
			for _, bad := range []string{"retrying while its validity lasts", "released " + key, "lock lost"} {
				if strings.Contains(out, bad) {
					t.Errorf("hold -v says %q of a lock the nodes refused to extend for good:\n%s", bad, out)
				}
			}
			if n := strings.Count(out, "NOPERM"); n != 1 {
				t.Errorf("the refusal told %d times, want once (on the loss's line):\n%s", n, out)
			}
			if !strings.Contains(out, "hold: the lock "+strconv.Quote(key)+" was lost: an extension was refused") {
				t.Errorf("hold's loss line does not tell the refusal:\n%s", out)
			}
		})
	}
}

// startHoldAs starts hold with args, then --nodes naming servers as the ACL
// user with password and every right (see setUser), then key; it returns
// hold once it holds the lock, and the servers' addresses as that user.
func startHoldAs(t *testing.T, servers []*redistest.Server, user, password, key string, args ...string) (*background, []string) {
	t.Helper()
	urls := setUser(t, servers, user, password)
	b, _ := startHold(t, append(args, "--nodes", strings.Join(urls, ","), key)...)
	return b, urls
}

// takePexpire takes PEXPIRE, which the extension script calls, from the ACL
// user on each of servers: every extension through them is then refused
// with NOPERM, which retrying cannot fix.
func takePexpire(t *testing.T, user string, servers ...*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		if _, err := s.Do(t.Context(), "ACL", "SETUSER", user, "-pexpire"); err != nil {
			t.Fatal(err)
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
