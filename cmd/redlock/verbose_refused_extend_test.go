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
// hold on one node of three once it holds the lock: that node refuses
// every extension with NOPERM, which retrying cannot fix, while the two
// others extend the lock. -v said nothing of it (nodeFailed leaves such
// errors to the loss's line, and there was no loss), though the lock then
// had no node to spare. It now says so once, through every driver, however
// many extensions follow, and tells no loss; and without -v too, as a node
// that refuses the acquisition is told without it (tellBroken): it is a
// configuration error that an operator must see, which said only with -v
// went unseen where it matters, in the unattended runs.
func TestVerboseTellsNodeRefusingExtension(t *testing.T) {
	t.Parallel()
	const password = "refext-Passw0rd"
	servers, _ := nodes(t, 3)
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		for _, verbose := range []bool{true, false} {
			name := d
			if !verbose {
				name += "-quiet"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				user, key := "refext-"+name, "refext-"+name
				// Extended every 2s. With --ttl 1500ms (every 500ms,
				// a node timeout of 150ms) the lock, which has no node
				// to spare here, was lost under -race on the loaded
				// machine (load average 46 on 2 cores): its validity
				// ran out before the two other nodes answered. The node
				// timeout is 1s, not the default 200ms: hold's first
				// calls connect, and under -race on a loaded machine a
				// connection took longer than 200ms (valkeygo: "connect:
				// still connecting"), so that the lock was granted by two
				// nodes, the one about to refuse among them, and lost at
				// the first refusal (1 of 32 subtests).
				args := []string{"--driver", d, "--ttl", "6s", "--node-timeout", "1s"}
				if verbose {
					args = append([]string{"-v"}, args...)
				}
				b, urls := startHoldAs(t, servers, user, password, key, args...)
				defer b.cmd.Process.Signal(syscall.SIGTERM)
				// The premise: every node holds the lock (the SET of the
				// last may answer after the grant), so that the two
				// others are a quorum once the first refuses.
				waitHeldEverywhere(t, servers, key, 10*time.Second)
				takePexpire(t, user, servers[0])
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
					t.Errorf("hold (-v %v) tells a loss of a lock held by a quorum throughout:\n%s", verbose, out)
				}
			})
		}
	}
}

// waitHeldEverywhere waits up to d for key to exist on every server.
func waitHeldEverywhere(t *testing.T, servers []*redistest.Server, key string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); holders(t, servers, key) < len(servers); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is on %d of %d nodes %v after the grant: the acquisition did not reach every node", key, holders(t, servers, key), len(servers), d)
		}
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
