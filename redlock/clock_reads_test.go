package redlock_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// Once the nodes' identities are settled, an acquisition reads the Client's
// clock twice: when it starts and when it judges the validity left. A clock
// read is not free (110-160ns for time.Now on a virtual machine, 14 of them
// per lone lock+unlock through the rueidis driver), and none is spent on a
// figure nobody reads (checkAnswered's grace, needed only while the first
// identities are asked).
func TestTryLockReadsTheClockTwice(t *testing.T) {
	synctest.Test(t, tryLockReadsTheClockTwice)
}

func tryLockReadsTheClockTwice(t *testing.T) {
	_, nodes := memNodes(3)
	var (
		counting atomic.Bool
		reads    atomic.Int64
	)
	c, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	redlock.SetClock(c, func() time.Time {
		if counting.Load() {
			reads.Add(1)
		}
		return time.Now()
	})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	l, err := c.TryLock(ctx, "warm") // the identities are settled by the first round
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The identities are asked in the background: in a bubble, Wait lets
	// them settle (on a loaded machine they may not have by now otherwise).
	synctest.Wait()
	counting.Store(true)
	l, err = c.TryLock(ctx, "k")
	counting.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if got := reads.Load(); got != 2 {
		t.Errorf("TryLock read the Client's clock %d times, want 2 (its start, its validity)", got)
	}
}
