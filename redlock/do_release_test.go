package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// A Do whose release fails on too many nodes (they stall as fn returns: the
// release times out) says why: its error matches ErrLockLost, as a release
// that no quorum confirmed, and also ErrUnavailable, with the release's votes
// and the nodes' errors, so that a caller can tell nodes that failed from a
// lock found gone, which matches ErrLockLost alone.
func TestDoReleaseFailureSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithNodeTimeout(100*time.Millisecond))
		err := c.Do(t.Context(), "k", func(context.Context) error {
			for _, m := range mem[:3] {
				m.SetStalled(true)
			}
			return nil
		})
		for _, m := range mem {
			m.SetStalled(false)
		}
		if !errors.Is(err, redlock.ErrLockLost) {
			t.Fatalf("Do whose release timed out on 3 of 5 nodes = %v, want an error matching ErrLockLost", err)
		}
		var ve *redlock.VoteError
		var ne *redlock.NodeError
		if !errors.Is(err, redlock.ErrUnavailable) || !errors.As(err, &ve) || ve.Failed != 3 || !errors.As(err, &ne) ||
			!errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do whose release timed out on 3 of 5 nodes = %v; want it to match ErrUnavailable, with the release's votes (3 failed) and the nodes' errors (deadline exceeded)", err)
		}

		// A lock found gone at the release: ErrLockLost, not ErrUnavailable.
		err = c.Do(t.Context(), "gone", func(context.Context) error {
			for _, m := range mem {
				m.Delete("gone")
			}
			return nil
		})
		if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrUnavailable) {
			t.Errorf("Do whose key every node lost = %v, want ErrLockLost and not ErrUnavailable", err)
		}
		if !errors.As(err, &ve) || ve.Refused < 3 || ve.Failed != 0 {
			t.Errorf("Do whose key every node lost = %v, want the release's votes (3 or more refused, none failed)", err)
		}
	})
}
