//go:build unix

package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerboseTellsFailedNode kills one node of three: run -v took the lock
// on the other two and said nothing of the third, with or without -v, though
// the lock then had no node to spare. With -v it now says which node failed
// and why, on one line, once though the release fails there too; without
// -v, nothing. Through every driver.
func TestVerboseTellsFailedNode(t *testing.T) {
	t.Parallel()
	servers, nodeList := nodes(t, 3)
	down := servers[2].Addr()
	if err := servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "failed-node-" + d
			r := invoke(t, "", "run", "-v", "--driver", d, "--nodes", nodeList, key, "--", "true")
			if r.code != 0 {
				t.Fatalf("run -v with one node of three down:\n%v", r)
			}
			told := "redlock: node " + down + " failed to acquire " + key + " (a lock needs a quorum of the nodes, not every one): "
			if n := strings.Count(r.stderr, told); n != 1 {
				t.Errorf("the failed node told %d times, want once (%q...):\n%v", n, told, r)
			}
			if n := strings.Count(r.stderr, "node "+down); n != 1 {
				t.Errorf("the failed node named on %d lines, want 1:\n%v", n, r)
			}
			r = invoke(t, "", "run", "--driver", d, "--nodes", nodeList, key, "--", "true")
			if r.code != 0 || r.stderr != "" {
				t.Errorf("run without -v with one node of three down: want exit 0 and nothing on stderr:\n%v", r)
			}
		})
	}
}

// TestVerboseTellsNodeFailingAndBack kills one node of three while hold -v
// holds the lock, then starts it again: the extensions went on with the two
// others and -v said nothing of it. It now says, once, that the node failed
// to extend the lock, and, once, that it answers again; the lock is held
// throughout.
func TestVerboseTellsNodeFailingAndBack(t *testing.T) {
	t.Parallel()
	servers, nodeList := nodes(t, 3)
	key := "failing-and-back"
	// Extended every 2s, each call bounded by 1s: with the node killed the
	// lock has no node to spare, and a TTL of 1500ms (extended every 500ms,
	// a node timeout of 150ms) is what lost such a lock on a loaded machine
	// in TestVerboseTellsNodeRefusingExtension.
	b, _ := startHold(t, "-v", "--ttl", "6s", "--node-timeout", "1s", "--nodes", nodeList, key)
	defer b.cmd.Process.Signal(syscall.SIGTERM)
	// The premise: the node is killed once it holds the key. hold prints
	// its line once a quorum granted the lock, and a kill that came before
	// the last SET answered failed the acquisition there, which -v told
	// ("failed to acquire"), and no extension's failure after it (a node is
	// told once until it answers again): the wait for "failed to extend"
	// failed (1 of 8 runs beside four CPU-spinning processes).
	waitHeldEverywhere(t, servers, key, 10*time.Second)
	addr := servers[1].Addr()
	if err := servers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	failed := "redlock: node " + addr + " failed to extend " + key + " (a lock needs a quorum of the nodes, not every one): "
	waitStderr(t, b, failed, 30*time.Second)
	if err := servers[1].Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := "redlock: node " + addr + " answers again\n"
	waitStderr(t, b, back, 30*time.Second)
	b.cmd.Process.Signal(syscall.SIGTERM)
	if code := b.wait(30 * time.Second); code != 128+int(syscall.SIGTERM) && code != 0 {
		t.Fatalf("hold after SIGTERM: exit %d; stderr:\n%s", code, b.stderr.String())
	}
	out := b.stderr.String()
	for _, want := range []string{failed, back} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q told %d times, want once:\n%s", want, n, out)
		}
	}
	if strings.Contains(out, "lost") {
		t.Errorf("hold -v tells a loss of a lock held by a quorum throughout:\n%s", out)
	}
}

// waitStderr waits up to d for the stderr of b to contain want.
func waitStderr(t *testing.T, b *background, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(b.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr within %v:\n%s", want, d, b.stderr.String())
		}
		select {
		case <-b.done:
			t.Fatalf("exited (%d) before %q on stderr:\n%s", b.code, want, b.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestVerboseLossCauseOnce deletes the key of a lock that run -v and hold -v
// hold from every node: the next extension finds it gone. -v told how
// twice: on its own line of the loss, then on the command's. It now tells
// it once, on the command's line, which says it also without -v.
func TestVerboseLossCauseOnce(t *testing.T) {
	t.Parallel()
	servers, nodeList := nodes(t, 3)
	for _, cmd := range []string{"run", "hold"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			key := "cause-once-" + cmd
			args := []string{"-v", "--ttl", "1500ms", "--nodes", nodeList, key}
			var b *background
			if cmd == "run" {
				b = start(t, append(append([]string{"run"}, args...), "--", "sh", "-c", "echo held; exec sleep 60")...)
				b.waitLine("held", 30*time.Second)
			} else {
				b, _ = startHold(t, args...)
			}
			defer b.cmd.Process.Signal(syscall.SIGTERM)
			for _, s := range servers {
				if _, err := s.Do(t.Context(), "DEL", key); err != nil {
					t.Fatal(err)
				}
			}
			if code := b.wait(30 * time.Second); code != exitLockLost {
				t.Fatalf("%s -v whose key was deleted: exit %d, want %d; stderr:\n%s", cmd, code, exitLockLost, b.stderr.String())
			}
			out := b.stderr.String()
			if n := strings.Count(out, "lost "+key+" after holding it for "); n != 1 {
				t.Errorf("-v told the loss %d times, want once:\n%s", n, out)
			}
			if n := strings.Count(out, "an extension found it gone from too many nodes for a quorum"); n != 1 {
				t.Errorf("how the lock was lost told %d times, want once:\n%s", n, out)
			}
		})
	}
}
