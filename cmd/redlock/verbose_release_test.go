package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
)

// A release that too many nodes fail to answer (ErrUnavailable) proves
// nothing about the lock, and run exits 0 for it: -v must not tell that the
// lock was lost, nor that the nodes said it was gone; it tells that the
// release failed. A release that the nodes refuse (the key gone from two of
// three) is a loss, told as such. The lock is held on in-process memory
// nodes, two of which go down, or lose the key, while CMD runs.
func TestVerboseReleaseUnavailableIsNoLoss(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, fault func(n *memory.Node)) (error, string) {
		addrs := []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}
		var stderr bytes.Buffer
		o := &lockFlags{nodeFlags: nodeFlags{nodes: strings.Join(addrs, ","), driver: "memory"}, key: "k", ttl: 10 * time.Second, verbose: true}
		err := withLock(context.Background(), "run", o, &stderr, nil, func(context.Context, heldLock) error {
			for _, a := range addrs[:2] {
				n, err := memory.Open(a)
				if err != nil {
					return err
				}
				fault(n)
			}
			return nil
		})
		return err, stderr.String()
	}
	t.Run("Down", func(t *testing.T) {
		err, s := run(t, func(n *memory.Node) { n.SetDown(true) })
		if err != nil {
			t.Fatalf("run whose release found 2 of 3 nodes down: want exit 0, got %v; stderr:\n%s", err, s)
		}
		if strings.Contains(s, "lost k") || strings.Contains(s, "gone from a quorum") {
			t.Errorf("-v tells a loss that the nodes never reported (they failed; run exits 0):\n%s", s)
		}
		if !strings.Contains(s, "releasing k failed (2 of 3 nodes failed)") {
			t.Errorf("-v does not tell that the release failed:\n%s", s)
		}
	})
	t.Run("Gone", func(t *testing.T) {
		err, s := run(t, func(n *memory.Node) { n.Delete("k") })
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitLockLost {
			t.Fatalf("run whose key was gone from 2 of 3 nodes at the release: want exit %d, got %v; stderr:\n%s", exitLockLost, err, s)
		}
		if strings.Count(s, "lost k after holding it for") != 1 || !strings.Contains(s, "the release found it gone from a quorum of the nodes") {
			t.Errorf("-v does not tell the loss at the release, once:\n%s", s)
		}
	})
}
