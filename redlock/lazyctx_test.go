package redlock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// newLazy returns a lazyDeadline over parent that ends after d.
func newLazy(parent context.Context, d time.Duration) *lazyDeadline {
	l := &lazyDeadline{}
	l.init(parent, time.Now().Add(d), context.Background())
	return l
}

// isDone reports whether ch is closed.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLazyDeadlineEndsAtItsDeadline(t *testing.T) {
	for _, armed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			l := newLazy(context.Background(), time.Second)
			if d, ok := l.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
				t.Fatalf("Deadline = %v, %v; want a second from now", d, ok)
			}
			var done <-chan struct{}
			if armed {
				done = l.Done()
			}
			time.Sleep(time.Second - time.Nanosecond)
			if err := l.Err(); err != nil {
				t.Fatalf("armed=%v: Err before the deadline = %v", armed, err)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("armed=%v: Err at the deadline = %v, want DeadlineExceeded", armed, err)
			}
			if !armed {
				done = l.Done() // asked for only now: closed already
			}
			if !isDone(done) {
				t.Fatalf("armed=%v: Done not closed at the deadline", armed)
			}
			l.end() // changes nothing
			if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("armed=%v: Err after end = %v, want DeadlineExceeded still", armed, err)
			}
		})
	}
}

func TestLazyDeadlineEnd(t *testing.T) {
	for _, armed := range []string{"never", "before", "after"} {
		synctest.Test(t, func(t *testing.T) {
			l := newLazy(context.Background(), time.Hour)
			var done <-chan struct{}
			if armed == "before" {
				done = l.Done()
			}
			l.end()
			if armed == "after" {
				done = l.Done()
			}
			if err := l.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Done asked %s end: Err = %v, want Canceled", armed, err)
			}
			if done != nil && !isDone(done) {
				t.Fatalf("Done asked %s end: not closed", armed)
			}
			time.Sleep(2 * time.Hour) // the deadline passing changes nothing
			if err := l.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("Done asked %s end: Err past the deadline = %v, want Canceled still", armed, err)
			}
		})
	}
}

func TestLazyDeadlineFollowsItsParent(t *testing.T) {
	for _, armed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			type key struct{}
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			l := newLazy(parent, time.Hour)
			if got := l.Value(key{}); got != "v" {
				t.Fatalf("Value = %v, want the parent's", got)
			}
			var done <-chan struct{}
			if armed {
				done = l.Done()
			}
			cancel()
			synctest.Wait()
			if err := l.Err(); !errors.Is(err, context.Canceled) {
				t.Fatalf("armed=%v: Err = %v, want the parent's Canceled", armed, err)
			}
			if !armed {
				done = l.Done()
			}
			if !isDone(done) {
				t.Fatalf("armed=%v: Done not closed after the parent's end", armed)
			}
		})
	}
}

func TestLazyDeadlineKeepsTheEarlierParentDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l := newLazy(parent, time.Hour)
		if d, _ := l.Deadline(); !d.Equal(time.Now().Add(time.Second)) {
			t.Fatalf("Deadline = %v, want the parent's, a second from now", d)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if err := l.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want the parent's DeadlineExceeded", err)
		}
	})
}

// A context derived from a lazyDeadline ends with it, at once, and no
// goroutine watches its Done.
func TestLazyDeadlineDerivedContexts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLazy(context.Background(), time.Second)
		before := runtime.NumGoroutine()
		child, cancel := context.WithCancel(l)
		defer cancel()
		timed, cancelTimed := context.WithTimeout(l, time.Hour)
		defer cancelTimed()
		if n := runtime.NumGoroutine() - before; n != 0 {
			t.Errorf("%d goroutines started to derive two contexts from it, want none", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for name, ctx := range map[string]context.Context{"WithCancel": child, "WithTimeout": timed} {
			if !isDone(ctx.Done()) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("%s of it: Err = %v at its deadline, want DeadlineExceeded and Done closed", name, ctx.Err())
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := newLazy(context.Background(), time.Hour)
		child, cancel := context.WithCancel(l)
		defer cancel()
		l.end()
		if !isDone(child.Done()) || !errors.Is(child.Err(), context.Canceled) {
			t.Errorf("WithCancel of it: Err = %v after end, want Canceled and Done closed", child.Err())
		}
	})
}

// Done, Err and end race with each other: run with -race.
func TestLazyDeadlineConcurrent(t *testing.T) {
	for range 100 {
		l := newLazy(context.Background(), time.Millisecond)
		var wg sync.WaitGroup
		wg.Go(func() { <-l.Done() })
		wg.Go(func() {
			for l.Err() == nil {
			}
		})
		wg.Go(func() { time.Sleep(time.Millisecond / 2); l.end() })
		wg.Wait()
		if err := l.Err(); !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err = %v after the race, want Canceled or DeadlineExceeded", err)
		}
		if !isDone(l.Done()) {
			t.Fatal("Done not closed after the race")
		}
	}
}

// Its values answer before its parent's, before and after it becomes a
// context.WithDeadline, and derived contexts see them.
func TestLazyDeadlineValues(t *testing.T) {
	type key struct{}
	parent := driver.WithNetworkTimeout(context.WithValue(context.Background(), key{}, "parent"), time.Hour)
	l := &lazyDeadline{}
	l.init(parent, time.Now().Add(time.Hour), driver.WithNetworkTimeout(context.Background(), time.Second))
	check := func(when string, ctx context.Context) {
		t.Helper()
		if d, ok := driver.NetworkTimeout(ctx); !ok || d != time.Second {
			t.Errorf("%s: network timeout %v, %v; want its own, 1s", when, d, ok)
		}
		if got := ctx.Value(key{}); got != "parent" {
			t.Errorf("%s: Value = %v, want the parent's", when, got)
		}
	}
	check("lazy", l)
	child, cancel := context.WithCancel(l) // makes it a context.WithDeadline
	defer cancel()
	check("after Done", l)
	check("derived", child)
	if got := testing.AllocsPerRun(100, func() { driver.NetworkTimeout(l) }); got != 0 {
		t.Errorf("reading its network timeout allocates %v times, want none", got)
	}
}

// Every round ends its contexts (end), twice per lone lock+unlock: ending a
// lazyDeadline that nobody asked for Done, as a round's call sent at once
// leaves it, costs no allocation; nor does its Err once it passed its
// deadline.
func TestLazyDeadlineEndAllocatesNothing(t *testing.T) {
	const runs = 100
	ls, next := make([]lazyDeadline, 2*(runs+1)), 0 // AllocsPerRun runs once more, unmeasured
	fresh := func() *lazyDeadline { next++; return &ls[next-1] }
	deadline := time.Now().Add(time.Hour)
	got := testing.AllocsPerRun(runs, func() {
		l := fresh()
		l.init(context.Background(), deadline, nil)
		l.end()
		if !errors.Is(l.Err(), context.Canceled) {
			t.Fatalf("Err after end = %v, want Canceled", l.Err())
		}
	})
	if got != 0 {
		t.Errorf("end allocates %v times, want none", got)
	}
	past := time.Now().Add(-time.Second)
	got = testing.AllocsPerRun(runs, func() {
		l := fresh()
		l.init(context.Background(), past, nil)
		if !errors.Is(l.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err past the deadline = %v, want DeadlineExceeded", l.Err())
		}
	})
	if got != 0 {
		t.Errorf("Err past the deadline allocates %v times, want none", got)
	}
}
