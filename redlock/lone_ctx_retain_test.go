package redlock_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A Lock does not keep the contexts its TryLock and Unlock were given: on a
// Client of one node (whose calls go straight from the caller, without a
// round), the contexts of the lone SET and release were kept in the Lock's
// own allocation (50448fe, reverted), and with them every value of the
// caller's context (a request's, say) for as long as the Lock was
// referenced.
func TestLoneLockKeepsNoCallerContext(t *testing.T) {
	// liveNodeTimeout: with the default 200ms, on the real clock, a
	// machine that stalls the test that long fails a TryLock or an Unlock.
	// The real clock stays: the collections are awaited in real time.
	c, err := redlock.New([]driver.Node{memory.New()}, redlock.WithNodeTimeout(liveNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// The Client's first calls learn the node's identity; the direct path
	// is taken from then on.
	for i := 0; !redlock.Direct(c); i++ {
		if i == 500 {
			t.Fatal("the Client of one node takes no direct path")
		}
		l0, err := c.TryLock(ctx, "warm", redlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if err := l0.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	type payload struct{ b [1 << 10]byte }
	type key struct{}
	// withPayload returns ctx with a value whose collection sets collected.
	withPayload := func(collected *atomic.Bool) context.Context {
		p := new(payload)
		runtime.AddCleanup(p, func(b *atomic.Bool) { b.Store(true) }, collected)
		return context.WithValue(ctx, key{}, p)
	}
	// reachable reports whether collected is still false after collections.
	reachable := func(collected *atomic.Bool) bool {
		for i := 0; i < 100 && !collected.Load(); i++ {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		return !collected.Load()
	}
	var byLock, byUnlock atomic.Bool
	l, err := c.TryLock(withPayload(&byLock), "held", redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if reachable(&byLock) {
		t.Error("the value of TryLock's context is still reachable while its Lock is held")
	}
	if err := l.Unlock(withPayload(&byUnlock)); err != nil {
		t.Fatal(err)
	}
	if reachable(&byUnlock) {
		t.Error("the value of Unlock's context is still reachable from its Lock")
	}
	runtime.KeepAlive(l)
}
