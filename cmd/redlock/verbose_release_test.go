package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A release that too many nodes fail to answer (ErrUnavailable) proves
// nothing about the lock, and run exits 0 for it: -v must not tell that the
// lock was lost, nor that the nodes said it was gone; it tells that the
// release failed. A release that the nodes refuse (the key gone from two of
// three) is a loss, told as such. The lock is held on in-process memory
// nodes, two of which go down, or lose the key, while CMD runs.
func TestVerboseReleaseUnavailableIsNoLoss(t *testing.T) {
	t.Parallel()
	// run faults the first faulty of the three nodes while the lock is
	// held, once every node's SET has answered: the lock is granted on a
	// quorum, and a SET still in flight on a faulted node would make its
	// release wait for it rather than find the fault.
	run := func(t *testing.T, faulty int, fault func(n *memory.Node)) (error, string) {
		addrs := []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}
		var stderr bytes.Buffer
		o := &lockFlags{nodeFlags: nodeFlags{nodes: strings.Join(addrs, ","), driver: "memory"}, key: "k", ttl: 10 * time.Second, verbose: true}
		err := withLock(context.Background(), "run", o, &stderr, nil, func(context.Context, heldLock) error {
			nodes := make([]*memory.Node, len(addrs))
			for i, a := range addrs {
				n, err := memory.Open(a)
				if err != nil {
					return err
				}
				nodes[i] = n
				t.Cleanup(func() { // the nodes outlive the test: -count above 1 meets them again
					n.SetDown(false)
					n.Delete("k")
				})
				for start := time.Now(); !n.Holds("k"); time.Sleep(time.Millisecond) {
					if time.Since(start) > 5*time.Second {
						return fmt.Errorf("node %s does not hold the key 5s after the lock was granted", a)
					}
				}
			}
			for _, n := range nodes[:faulty] {
				fault(n)
			}
			return nil
		})
		return err, stderr.String()
	}
	t.Run("Down", func(t *testing.T) {
		err, s := run(t, 2, func(n *memory.Node) { n.SetDown(true) })
		if err != nil {
			t.Fatalf("run whose release found 2 of 3 nodes down: want exit 0, got %v; stderr:\n%s", err, s)
		}
		if strings.Contains(s, "lost k") || strings.Contains(s, "gone from too many nodes") {
			t.Errorf("-v tells a loss that the nodes never reported (they failed; run exits 0):\n%s", s)
		}
		if !strings.Contains(s, "releasing k failed (2 of 3 nodes failed)") {
			t.Errorf("-v does not tell that the release failed:\n%s", s)
		}
		if n := strings.Count(s, "memory: node is down"); n != 2 {
			t.Errorf("the release's error, naming the 2 nodes down, is printed %d times, want once:\n%s", n/2, s)
		}
	})
	t.Run("Gone", func(t *testing.T) {
		// From every node: the node whose SET was not needed for the
		// quorum may apply it after fn's Delete there, and it must not
		// make a quorum with another (it did once in 300 runs with two).
		err, s := run(t, 3, func(n *memory.Node) { n.Delete("k") })
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitLockLost {
			t.Fatalf("run whose key was gone from the nodes at the release: want exit %d, got %v; stderr:\n%s", exitLockLost, err, s)
		}
		if strings.Count(s, "lost k after holding it for") != 1 {
			t.Errorf("-v does not tell the loss at the release, once:\n%s", s)
		}
		// How, once: on the command's line of the loss, not on -v's too.
		if all := s + err.Error(); strings.Count(all, "the release found it gone from too many nodes for a quorum") != 1 {
			t.Errorf("how the lock was lost is not told once:\n%s%v", s, err)
		}
	})
	t.Run("Unconfirmed", func(t *testing.T) {
		// The key deleted from one node, the other down: no quorum
		// confirmed the release (exit 76), but one node only said the
		// key was gone and one failed, which proves it gone from no
		// quorum. So it went with a node timeout too short for any
		// reply (--node-timeout 1ns): the release timed out on one of
		// the two nodes that held the key, and the third had refused
		// the lock's SET.
		faults := 0
		err, s := run(t, 2, func(n *memory.Node) {
			if faults++; faults == 1 {
				n.Delete("k")
			} else {
				n.SetDown(true)
			}
		})
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitLockLost {
			t.Fatalf("run whose release one node refused and one failed: want exit %d, got %v; stderr:\n%s", exitLockLost, err, s)
		}
		all := s + err.Error()
		if strings.Contains(all, "gone from too many nodes") {
			t.Errorf("the loss is told as the key found gone from too many nodes for a quorum, which 1 refusal of 3 nodes does not show:\n%s%v", s, err)
		}
		// The node that still holds the key may not have answered when
		// the other two decided it: it agreed, or counts in none.
		how := regexp.MustCompile(`the release could not confirm that a quorum of the nodes still held it \([01] of 3 nodes agreed, 2 needed; 1 said they no longer held it, 1 failed\)`)
		if n := len(how.FindAllString(all, -1)); n != 1 {
			t.Errorf("how the lock was lost is told %d times as %q, want once:\n%s%v", n, how, s, err)
		}
	})
}

// run -v --wait 0 makes one attempt and does not wait: on a key held
// elsewhere it must not say "waiting for KEY" (it exits with the conflict
// code and says why); with --wait above 0 it does say so. The key is held on
// in-process memory nodes.
func TestVerboseWaitZeroTellsNoWait(t *testing.T) {
	t.Parallel()
	addrs := []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}
	c, err := redlock.Open("memory", addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.TryLock(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	for _, wait := range []time.Duration{0, 20 * time.Millisecond} {
		var stderr bytes.Buffer
		o := &lockFlags{nodeFlags: nodeFlags{nodes: strings.Join(addrs, ","), driver: "memory"}, key: "k", ttl: 10 * time.Second, verbose: true, wait: wait, waitSet: true, conflictCode: exitConflict}
		err := withLock(context.Background(), "run", o, &stderr, nil, func(context.Context, heldLock) error { return nil })
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitConflict {
			t.Fatalf("run -v --wait %v on a held key: want exit %d, got %v", wait, exitConflict, err)
		}
		if said := strings.Contains(stderr.String(), "waiting for k"); said != (wait > 0) {
			t.Errorf("run -v --wait %v on a held key: 'waiting for k' said: %v, want %v; stderr:\n%s", wait, said, wait > 0, stderr.String())
		}
	}
}
