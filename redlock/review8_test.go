package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// derefObserver is an Observer whose methods dereference their receiver,
// as most do.
type derefObserver struct {
	redlock.NopObserver
	calls int
}

// An Observer that is a nil pointer (a variable never set) is bad input, as
// a nil node is: New and Open refuse it with an error that names it. New
// took it, and the first TryLock panicked with a nil pointer dereference
// in the observer's method.
func TestReviewTypedNilObserver(t *testing.T) {
	var o *derefObserver
	nodes := []driver.Node{memory.New(), memory.New(), memory.New()}
	c, err := redlock.New(nodes, redlock.WithObserver(o))
	if err == nil {
		defer c.Close()
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("New took a nil *derefObserver, and TryLock panicked: %v", v)
			}
		}()
		_, err := c.TryLock(t.Context(), "k")
		t.Fatalf("New took a nil *derefObserver; TryLock: %v", err)
	}
	if !strings.Contains(err.Error(), "WithObserver") || !strings.Contains(err.Error(), "nil *redlock_test.derefObserver") {
		t.Errorf("New with a nil *derefObserver: %v, want an error naming WithObserver and the type", err)
	}
	for _, n := range nodes {
		n.Close()
	}
	_, err = redlock.Open("memory", []string{"typed-nil-observer"}, redlock.WithObserver(o))
	if err == nil || !strings.Contains(err.Error(), "WithObserver") {
		t.Errorf("Open with a nil *derefObserver: %v, want an error naming WithObserver", err)
	}
}

// A fencing counter at its largest value (2^64-1, which drivers parse: a
// counter someone set, or 2^64 grants) has no token above it: TryLock and
// Lock fail, at once, with an error that says so (not ErrNotObtained, as
// for bad input: retrying cannot fix it), and leave the key free.
// The token wrapped to 0, the value of a lock without fencing, and the lock
// was granted with it: a resource that takes 0 for "no token" let it write.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestReviewFenceCounterExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := []*memory.Node{memory.New(), memory.New(), memory.New()}
		fk := driver.FenceKey("k")
		for _, n := range nodes {
			ok, err := n.SetNX(t.Context(), "setter", "v", time.Minute)
			require.True(t, ok)
			require.NoError(t, err)
			ok, err = n.RaiseFence(t.Context(), "setter", "v", fk, math.MaxUint64)
			require.True(t, ok)
			require.NoError(t, err)
		}
		c, err := redlock.New([]driver.Node{nodes[0], nodes[1], nodes[2]}, redlock.WithFencing())
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "k")
		if err == nil {
			t.Fatalf("TryLock over counters at 2^64-1 granted a lock with token %d", l.Token())
		}
		require.ErrorContains(t, err, "fencing counter")
		require.NotErrorIs(t, err, redlock.ErrNotObtained, "not contention: retrying cannot fix it")
		// Released on the nodes that answered before TryLock returned, and on
		// one whose SET had not answered once it does (see TryLock).
		require.Eventually(t, func() bool {
			return !nodes[0].Holds("k") && !nodes[1].Holds("k") && !nodes[2].Holds("k")
		}, 5*time.Second, time.Millisecond, "TryLock left the key held")
		start := time.Now()
		_, err = c.Lock(t.Context(), "k")
		require.ErrorContains(t, err, "fencing counter")
		require.Less(t, time.Since(start), 5*time.Second, "Lock went on retrying what retrying cannot fix")
	})
}

// Lock, TryLock and Do on a closed Client with a context that has ended
// return an error matching both ErrClosed and the context's error, as
// Extend does (every call's error includes ctx.Err() once its context
// ended); they returned ErrClosed alone.
func TestClosedClientEndedContext(t *testing.T) {
	c, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, errLock := c.Lock(ctx, "k")
	_, errTry := c.TryLock(ctx, "k")
	errDo := c.Do(ctx, "k", func(context.Context) error { return nil })
	for name, err := range map[string]error{"Lock": errLock, "TryLock": errTry, "Do": errDo} {
		if !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s on a closed Client with a canceled context: %v, want an error matching ErrClosed and context.Canceled", name, err)
		}
		if errors.Is(err, redlock.ErrNotObtained) {
			t.Errorf("%s on a closed Client: %v matches ErrNotObtained, which it never did (a closed Client is bad input)", name, err)
		}
	}
}

// Register refuses a driver that is a nil pointer, as it refuses a nil
// one: Open through it would panic at its first call.
func TestRegisterTypedNilDriver(t *testing.T) {
	var d *nilDriver
	defer func() {
		v := recover()
		if v == nil {
			t.Fatal("Register took a nil *nilDriver")
		}
		if s := fmt.Sprint(v); !strings.Contains(s, "nil") {
			t.Errorf("Register's panic %q does not say the driver is nil", s)
		}
	}()
	redlock.Register("review-typed-nil-driver", d)
}

type nilDriver struct{ name string }

func (d *nilDriver) Open(string) (driver.Node, error) { return nil, errors.New(d.name) }
