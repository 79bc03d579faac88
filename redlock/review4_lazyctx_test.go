package redlock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// context.Context: "After Err returns a non-nil error, successive calls to
// Err return the same error." A lazyDeadline ended (Canceled) and asked for
// Done only after its deadline passed becomes a context.WithDeadline whose
// deadline has passed: Err turns into DeadlineExceeded.
func TestReview4LazyErrStableAfterEndThenDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLazy(context.Background(), time.Second)
		l.end()
		if err := l.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err after end = %v, want Canceled", err)
		}
		time.Sleep(2 * time.Second)
		<-l.Done() // e.g. a driver's abandoned work, or a context derived late
		if err := l.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err changed from Canceled to %v once Done was asked for after the deadline", err)
		}
	})
}

// The same before end: Err says DeadlineExceeded by the clock, then the
// parent is canceled, and Err turns into Canceled (a context.WithDeadline
// would have stayed DeadlineExceeded: its timer fired first).
func TestReview4LazyErrStableAfterDeadlineThenParentCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := newLazy(parent, time.Second)
		time.Sleep(2 * time.Second)
		if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline = %v, want DeadlineExceeded", err)
		}
		cancel()
		if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err changed from DeadlineExceeded to %v when the parent was canceled", err)
		}
	})
}

// Checks that pass: a call queued in a batch.Batcher behind a stuck sender,
// with a round's lazyDeadline (never asked for Done before), is woken when
// the bound passes, and when its caller's context is canceled.
func TestReview4LazyQueuedInBatcher(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	sending := make(chan struct{}, 1)
	b := batch.New(func(ctx context.Context, calls []*batch.Call[int, int]) {
		select {
		case sending <- struct{}{}:
		default:
		}
		<-release
	}, 1, 1)
	go b.Do(context.Background(), 0) // holds the one sender
	// Once 0 is being sent, 1 and 2 queue behind it (a 20ms sleep for that
	// was a margin a loaded machine could pass: 1 then went to the sender
	// itself, not to the queue the test is about).
	<-sending

	var l lazyDeadline
	l.init(context.Background(), time.Now().Add(100*time.Millisecond), driver.WithNetworkTimeout(context.Background(), 50*time.Millisecond))
	start := time.Now()
	_, err := b.Do(&l, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued call past its bound: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("woken after %v", el)
	}

	parent, cancel := context.WithCancel(context.Background())
	var l2 lazyDeadline
	l2.init(parent, time.Now().Add(time.Hour), nil)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = b.Do(&l2, 2)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("queued call canceled by its caller: %v", err)
	}
}
