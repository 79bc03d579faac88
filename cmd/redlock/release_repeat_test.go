package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// TestReleaseRepeatTold: run's release fails on two of three nodes
// (stalled past the node timeout: ErrUnavailable), and the Client's
// background repeat of it gets through before run exits (the nodes resume
// while it waits). run said "releasing the lock failed; it expires by itself
// within its TTL" all the same; it now says that the repeat released it on
// every node. When the nodes stay down, it still says the lock expires by
// itself, on the nodes that did not release it. Neither says "lock lost":
// the release's error matches ErrLockLost (Unlock could not confirm it), but
// the lock was held to the end, and run exits with 0; it said "redlock:
// lock lost" on a line of its own before the votes.
func TestReleaseRepeatTold(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, fault func(n *memory.Node), resumeAfter time.Duration) (error, string, []*memory.Node) {
		addrs := []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}
		var stderr bytes.Buffer
		// A node timeout that the wait for a reply from a live node
		// never exhausts, and a resume in the middle of the repeat's
		// wait (the release fails after one node timeout, its repeat
		// waits one more), with a node timeout of margin each side.
		o := &lockFlags{nodeFlags: nodeFlags{nodes: strings.Join(addrs, ","), driver: "memory"}, key: "k", ttl: time.Minute, nodeTimeout: 3 * time.Second, verbose: true}
		var nodes []*memory.Node
		err := withLock(context.Background(), "run", o, &stderr, nil, func(context.Context, heldLock) error {
			for _, a := range addrs {
				n, err := memory.Open(a)
				if err != nil {
					return err
				}
				nodes = append(nodes, n)
				t.Cleanup(func() {
					n.SetStalled(false)
					n.SetDown(false)
					n.Delete("k")
				})
				for start := time.Now(); !n.Holds("k"); time.Sleep(time.Millisecond) {
					if time.Since(start) > 10*time.Second {
						t.Fatalf("node %s does not hold the key 10s after the grant", a)
					}
				}
			}
			for _, n := range nodes[:2] {
				fault(n)
				if resumeAfter > 0 {
					time.AfterFunc(resumeAfter, func() { n.SetStalled(false) })
				}
			}
			return nil
		})
		return err, stderr.String(), nodes
	}
	t.Run("RepeatReleased", func(t *testing.T) {
		t.Parallel()
		err, s, nodes := run(t, func(n *memory.Node) { n.SetStalled(true) }, 4500*time.Millisecond)
		if err != nil {
			t.Fatalf("run: want exit 0, got %v; stderr:\n%s", err, s)
		}
		for i, n := range nodes {
			if n.Holds("k") {
				t.Errorf("node %d still holds the key after run", i)
			}
		}
		if strings.Contains(s, "expires by itself") {
			t.Errorf("run says the lock expires by itself, though the repeat released it on every node before exit:\n%s", s)
		}
		// The stalled nodes may have run the first send after its
		// deadline: the repeat then finds the key gone.
		if !strings.Contains(s, "then its repeat released it on all 3 nodes") && !strings.Contains(s, "then its repeat released it or found it gone on all 3 nodes") {
			t.Errorf("run does not tell that the repeat released the lock:\n%s", s)
		}
		if strings.Contains(s, "lock lost") {
			t.Errorf("run says \"lock lost\" of a lock held to its release:\n%s", s)
		}
	})
	t.Run("StillDown", func(t *testing.T) {
		t.Parallel()
		err, s, _ := run(t, func(n *memory.Node) { n.SetDown(true) }, 0)
		if err != nil {
			t.Fatalf("run: want exit 0, got %v; stderr:\n%s", err, s)
		}
		if !strings.Contains(s, "failed (1 of 3 nodes released it, its repeat included); it expires by itself within its TTL on the others") {
			t.Errorf("run does not tell that the lock expires by itself on the 2 nodes down:\n%s", s)
		}
		if strings.Contains(s, "lock lost") || !strings.Contains(s, " of 3 nodes agreed, 2 needed (") {
			t.Errorf("run: want the release's votes, without \"lock lost\" (the lock was held to its release):\n%s", s)
		}
	})
}
