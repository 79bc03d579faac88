//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// TestVerboseTellsNodeRefusingExtension takes PEXPIRE from the ACL user of
// hold -v on one node of three once it holds the lock: that node refuses
// every extension with NOPERM, which retrying cannot fix, while the two
// others extend the lock. -v said nothing of it (nodeFailed leaves such
// errors to the loss's line, and there was no loss), though the lock then
// had no node to spare. It now says so once, through every driver, however
// many extensions follow, and tells no loss.
func TestVerboseTellsNodeRefusingExtension(t *testing.T) {
	t.Parallel()
	const password = "refext-Passw0rd"
	servers, _ := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			user, key := "refext-"+d, "refext-"+d
			urls := setUser(t, servers, user, password)
			// Extended every 500ms.
			b, _ := startHold(t, "-v", "--driver", d, "--ttl", "1500ms", "--nodes", strings.Join(urls, ","), key)
			defer b.cmd.Process.Signal(syscall.SIGTERM)
			if _, err := servers[0].Do(t.Context(), "ACL", "SETUSER", user, "-pexpire"); err != nil {
				t.Fatal(err)
			}
			told := "redlock: node " + strings.Replace(urls[0], password, "xxxxx", 1) + " answered NOPERM to the extension of " + key + ", which retrying cannot fix, so the lock is held on the other nodes, with that node fewer to spare (see redlock doctor): "
			waitStderr(t, b, told, 30*time.Second)
			// Three more extensions on the others, each refused again.
			waitExtensions(t, servers[1], key, 3, 30*time.Second)
			b.cmd.Process.Signal(syscall.SIGTERM)
			if code := b.wait(30 * time.Second); code != 128+int(syscall.SIGTERM) && code != 0 {
				t.Fatalf("hold after SIGTERM: exit %d; stderr:\n%s", code, b.stderr.String())
			}
			out := b.stderr.String()
			if n := strings.Count(out, told); n != 1 {
				t.Errorf("the refusing node told %d times, want once (%q...):\n%s", n, told, out)
			}
			if strings.Contains(out, "lost") {
				t.Errorf("hold -v tells a loss of a lock held by a quorum throughout:\n%s", out)
			}
		})
	}
}

// waitExtensions waits up to d for n extensions of key on s, each seen as
// its PTTL rising.
func waitExtensions(t *testing.T, s *redistest.Server, key string, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last int64 = -1
	for seen := 0; seen < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d extensions of %s within %v, want %d", seen, key, d, n)
		}
		v, err := s.Do(t.Context(), "PTTL", key)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := v.(int64)
		if last >= 0 && ms > last {
			seen++
		}
		last = ms
	}
}
