package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// faultyLone is a memory node whose calls fail as its fields say, and which
// records them.
type faultyLone struct {
	m        *memory.Node
	mu       sync.Mutex
	armed    bool // the faults apply
	log      []string
	setErr   error
	setSleep time.Duration // ignoring ctx past it: a slow SET
	setHang  bool          // until ctx ends
	relErrs  int           // the first releases that fail
	relFalse bool
}

func (n *faultyLone) rec(s string) {
	n.mu.Lock()
	n.log = append(n.log, s)
	n.mu.Unlock()
}

func (n *faultyLone) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Extend(ctx, key, value, ttl)
}

func (n *faultyLone) Close() error { return n.m.Close() }

func (n *faultyLone) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.rec("set")
	n.mu.Lock()
	armed := n.armed
	n.mu.Unlock()
	if !armed {
		return n.m.SetNX(ctx, key, value, ttl)
	}
	if n.setHang {
		<-ctx.Done()
		return false, ctx.Err()
	}
	time.Sleep(n.setSleep)
	if n.setErr != nil {
		return false, n.setErr
	}
	return n.m.SetNX(ctx, key, value, ttl)
}

func (n *faultyLone) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	n.log = append(n.log, "release")
	armed := n.armed
	fail := armed && n.relErrs > 0
	if armed {
		n.relErrs--
	}
	n.mu.Unlock()
	if fail {
		return false, errors.New("release broke")
	}
	if armed && n.relFalse {
		return false, nil
	}
	return n.m.EvalRelease(ctx, key, value)
}

// A Client of one node without observers (its calls made without rounds)
// fails as one with an observer (rounds) does, fault for fault: the same
// sentinels, the same context errors, the same node calls afterwards.
func TestBreakLoneDirectMatchesRound(t *testing.T) {
	type fault struct {
		name   string
		node   func() *faultyLone
		cancel bool // the TryLock's context canceled while the SET runs
		ttl    time.Duration
	}
	faults := []fault{
		{name: "ok", node: func() *faultyLone { return &faultyLone{} }},
		{name: "set error", node: func() *faultyLone { return &faultyLone{setErr: errors.New("set broke")} }},
		{name: "set hangs", node: func() *faultyLone { return &faultyLone{setHang: true} }},
		{name: "set hangs, ctx canceled", node: func() *faultyLone { return &faultyLone{setHang: true} }, cancel: true},
		{name: "set slow past validity", node: func() *faultyLone { return &faultyLone{setSleep: 90 * time.Millisecond} }, ttl: 100 * time.Millisecond},
		{name: "release fails twice", node: func() *faultyLone { return &faultyLone{relErrs: 2} }},
		{name: "release false", node: func() *faultyLone { return &faultyLone{relFalse: true} }},
	}
	sentinels := []error{redlock.ErrNotObtained, redlock.ErrUnavailable, redlock.ErrLockLost, context.Canceled, context.DeadlineExceeded, redlock.ErrClosed}
	describe := func(err error) string {
		if err == nil {
			return "nil"
		}
		s := ""
		for _, e := range sentinels {
			if errors.Is(err, e) {
				s += e.Error() + ";"
			}
		}
		var ne *redlock.NodeError
		if errors.As(err, &ne) {
			s += "NodeError;"
		}
		return s
	}
	run := func(t *testing.T, f fault, observed bool) string {
		var out string
		synctest.Test(t, func(t *testing.T) {
			n := f.node()
			n.m = memory.New()
			opts := []redlock.Option{redlock.WithNodeTimeout(50 * time.Millisecond)}
			if f.ttl != 0 {
				opts = append(opts, redlock.WithTTL(f.ttl))
			}
			if observed {
				opts = append(opts, redlock.WithObserver(redlock.NopObserver{}))
			}
			c, err := redlock.New([]driver.Node{n}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			// The first TryLock asks the node's identity (a round either way).
			l, err := c.TryLock(t.Context(), "warm")
			if err != nil {
				t.Fatal(err)
			}
			_ = l.Unlock(t.Context())
			n.mu.Lock()
			n.log, n.armed = nil, true
			n.mu.Unlock()
			ctx, cancel := context.WithCancel(t.Context())
			if f.cancel {
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			l, err = c.TryLock(ctx, "k")
			cancel()
			out = "trylock: " + describe(err)
			if l != nil {
				out += fmt.Sprintf(" unlock: %s", describe(l.Unlock(t.Context())))
			}
			time.Sleep(time.Second)
			synctest.Wait()
			n.mu.Lock()
			out += fmt.Sprintf(" calls: %v held: %v", n.log, n.m.Holds("k"))
			n.mu.Unlock()
			c.Close()
		})
		return out
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			direct, round := run(t, f, false), run(t, f, true)
			t.Logf("direct: %s", direct)
			if direct != round {
				t.Errorf("direct: %s\nround:  %s", direct, round)
			}
		})
	}
}
