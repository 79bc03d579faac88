package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// attemptLog is an Observer that records when each attempt starts and how
// many of them a release woke.
type attemptLog struct {
	redlock.NopObserver
	mu       sync.Mutex
	attempts []time.Time
	wakes    []time.Time
}

func (o *attemptLog) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.mu.Lock()
	o.attempts = append(o.attempts, time.Now())
	o.mu.Unlock()
	return ctx, nil
}

func (o *attemptLog) Wake(context.Context, redlock.Wake) {
	o.mu.Lock()
	o.wakes = append(o.wakes, time.Now())
	o.mu.Unlock()
}

// since returns how many attempts started, and how many wakes came, at or
// after t.
func (o *attemptLog) since(t time.Time) (attempts, wakes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	count := func(ts []time.Time) (n int) {
		for _, at := range ts {
			if !at.Before(t) {
				n++
			}
		}
		return n
	}
	return count(o.attempts), count(o.wakes)
}

// heldRelease is a memory node whose releases wait until gate closes.
type heldRelease struct {
	*memory.Node
	gate <-chan struct{}
}

func (n heldRelease) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	<-n.gate
	return n.Node.ReleaseNotify(ctx, key, value)
}

// wakeHold is an attemptLog whose Wake, the first time after hold is set,
// says so on woken and waits until proceed closes: the woken waiter stands
// between its wake and its attempt (as during the random delay of a wake
// under contention) while the test acts.
type wakeHold struct {
	attemptLog
	hold    atomic.Bool
	woken   chan struct{}
	proceed chan struct{}
}

func (o *wakeHold) Wake(ctx context.Context, e redlock.Wake) {
	o.attemptLog.Wake(ctx, e)
	if o.hold.CompareAndSwap(true, false) {
		close(o.woken)
		<-o.proceed
	}
}

// A release's notices that come between a waiter's wake and its attempt
// (each node of the release publishes one) are covered by that attempt: it
// reaches every node after them. Refused (another Client took the key
// first), the waiter is not woken again by them, for another attempt that
// every node refuses.
func TestNoticesBeforeAttemptDoNotWakeAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		gate := make(chan struct{})
		holderNodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			holderNodes[i] = m
			if i > 0 {
				holderNodes[i] = heldRelease{m, gate}
			}
		}
		holder := newClient(t, holderNodes, redlock.WithTTL(time.Hour))
		other := newClient(t, nodes, redlock.WithTTL(time.Hour))
		log := &wakeHold{woken: make(chan struct{}), proceed: make(chan struct{})}
		waiter := newClient(t, nodes, redlock.WithTTL(time.Hour),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithObserver(log))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // its SETs answered after the quorum too
		require.Equal(t, len(mem), holders(mem, "k"), "the holder holds every node")
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		lockReturned := make(chan error, 1)
		go func() {
			_, err := waiter.Lock(ctx, "k")
			lockReturned <- err
		}()
		time.Sleep(time.Minute) // its first attempts, then it waits, subscribed
		synctest.Wait()

		log.hold.Store(true)
		start := time.Now()
		unlocked := make(chan error, 1)
		go func() { unlocked <- held.Unlock(context.Background()) }()
		select {
		case <-log.woken: // by the first node's notice; the others release now
		case err := <-lockReturned:
			t.Fatalf("Lock returned before the release: %v", err)
		}
		close(gate)
		require.NoError(t, <-unlocked)
		synctest.Wait()
		_, err = other.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, len(mem), holders(mem, "k"), "other holds the key on every node")
		close(log.proceed)
		time.Sleep(time.Minute)
		synctest.Wait()

		attempts, wakes := log.since(start)
		require.Equal(t, 1, wakes, "wakes after the release (%d attempts): the attempt of the first, refused by every node, covers every notice of the release that came before it", attempts)
		require.Equal(t, 1, attempts, "attempts after the release, the Backoff an hour")
	})
}
