package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A fn that returns its context's cause when the lock is lost, as Do's
// documentation and examples advise, returns redlock.ErrLockLost itself: Do's
// error matches ErrLockLost and says "lock lost" once, not once for fn and
// once more for Do (before, "redlock: lock lost\nredlock: lock lost", and the
// release's votes after). An error of fn's own keeps its text, with Do's
// ErrLockLost joined.
func TestDoLostSaysSoOnce(t *testing.T) {
	errOwn := errors.New("settlement interrupted")
	for _, tc := range []struct {
		name string
		// lose makes the lock lost while fn runs: on the nodes (the
		// release then finds it gone), or by failed extensions only
		// (the nodes still hold it, and the release succeeds).
		lose  func(mem []*memory.Node)
		after func(mem []*memory.Node)
	}{
		{"deleted", func(mem []*memory.Node) {
			for _, m := range mem {
				m.Delete("k")
			}
		}, func([]*memory.Node) {}},
		{"extensions failed", func(mem []*memory.Node) {
			mem[0].SetDown(true)
			mem[1].SetDown(true)
		}, func(mem []*memory.Node) {
			mem[0].SetDown(false)
			mem[1].SetDown(false)
		}},
	} {
		for _, own := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mem, nodes := memNodes(3)
					c := newClient(t, nodes, redlock.WithTTL(9*time.Second))
					err := c.Do(t.Context(), "k", func(ctx context.Context) error {
						tc.lose(mem)
						select {
						case <-ctx.Done():
						case <-time.After(time.Minute):
							t.Error("fn's context was not canceled when the lock was lost")
						}
						tc.after(mem)
						if own {
							return errOwn
						}
						return context.Cause(ctx)
					})
					if !errors.Is(err, redlock.ErrLockLost) {
						t.Fatalf("Do = %v, want ErrLockLost", err)
					}
					if own && !errors.Is(err, errOwn) {
						t.Errorf("Do = %v, want fn's error in it", err)
					}
					if n := strings.Count(err.Error(), redlock.ErrLockLost.Error()); n != 1 {
						t.Errorf("Do = %q: says %q %d times, want once", err, redlock.ErrLockLost, n)
					}
				})
			})
		}
	}
}
