package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Regression tests for the defects a review of Lock's wait found.

// A Lock (or Do) capped by WithMaxAttempts gives up after its attempts, as
// its documentation says, even while another waiter of its Client for the
// key, without a cap, waits for as long as the key is held: the cap bounds
// the wait, whatever the other waiters of the Client do.
func TestLockCapBoundsWaitBehindAnotherWaiter(t *testing.T) {
	for _, call := range []string{"Lock", "Do"} {
		t.Run(call, func(t *testing.T) { capBoundsWaitBehindAnotherWaiter(t, call) })
	}
}

func capBoundsWaitBehindAnotherWaiter(t *testing.T, call string) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		holder := newClient(t, nodes)
		c := newClient(t, nodes)
		// Held for an hour: extended by Do until the test ends.
		held := make(chan struct{})
		release := make(chan struct{})
		go holder.Do(t.Context(), "k", func(context.Context) error {
			close(held)
			<-release
			return nil
		})
		defer close(release)
		<-held

		// An uncapped waiter takes the Client's turn for the key.
		uncapped, cancel := context.WithCancel(t.Context())
		defer cancel()
		go c.Lock(uncapped, "k")
		time.Sleep(time.Second)

		capped := make(chan error, 1)
		start := time.Now()
		go func() {
			opts := []redlock.Option{redlock.WithMaxAttempts(3), redlock.WithBackoff(redlock.ConstantBackoff(10 * time.Millisecond))}
			if call == "Do" {
				capped <- c.Do(context.Background(), "k", func(context.Context) error { return nil }, opts...)
				return
			}
			_, err := c.Lock(context.Background(), "k", opts...)
			capped <- err
		}()
		select {
		case err := <-capped:
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorContains(t, err, "gave up after 3 attempts")
		case <-time.After(time.Minute):
			t.Fatalf("%s with WithMaxAttempts(3) and a 10ms backoff still waits %v later, behind another waiter of its Client", call, time.Since(start))
		}
	})
}

// slowReply is a memory node whose SETs, while slow is set, are applied at
// once and answered 100ms later, as a node far away answers.
type slowReply struct {
	*memory.Node
	slow *atomic.Bool
}

func (n slowReply) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := n.Node.SetNX(ctx, key, value, ttl)
	if n.slow.Load() {
		if err := (memory.RealClock{}).Sleep(ctx, 100*time.Millisecond); err != nil {
			return false, err
		}
	}
	return ok, err
}

// waitersOf makes two Clients on nodes: one holds "k" (held); lock takes "k"
// with the other, whose Lock waits an hour between polls, and sends the time
// on got once it has it.
func waitersOf(t *testing.T, nodes []driver.Node) (held *redlock.Lock, lock func(), got <-chan time.Time) {
	t.Helper()
	holder := newClient(t, nodes)
	c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
	l, err := holder.TryLock(t.Context(), "k")
	require.NoError(t, err)
	times := make(chan time.Time, 2)
	return l, func() {
		wl, err := c.Lock(t.Context(), "k")
		if err == nil {
			times <- time.Now()
			wl.Unlock(context.Background())
		}
	}, times
}

// releasedThenHeld unlocks l and fails the test unless a waiter sends on got
// within a second (the synctest clock's); lost says what went wrong if none
// does within a minute.
func releasedThenHeld(t *testing.T, l *redlock.Lock, got <-chan time.Time, lost string) {
	t.Helper()
	released := time.Now()
	require.NoError(t, l.Unlock(t.Context()))
	select {
	case at := <-got:
		require.Less(t, at.Sub(released), time.Second, "the first Lock to get the key after the release")
	case <-time.After(time.Minute):
		t.Fatal("a minute after the release, no waiter of the Client holds the lock: " + lost)
	}
}

// A waiter woken by a release while another Lock of its Client has an
// attempt on the key in flight (refused before the release, not answered
// yet) retries once that attempt has ended, rather than after its Backoff:
// the wake is not lost to an attempt that never reached the nodes.
func TestWakeNotLostToAttemptInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = slowReply{memory.New(), &slow}
		}
		l, lock, got := waitersOf(t, nodes)
		go lock() // waits for the release, subscribed
		time.Sleep(time.Second)
		synctest.Wait()

		// Another Lock of the Client: its first attempt is refused at once,
		// and answered 100ms later, after the release.
		slow.Store(true)
		go lock()
		time.Sleep(10 * time.Millisecond)
		slow.Store(false)
		releasedThenHeld(t, l, got, "the wake was lost to the other Lock's attempt in flight, and the waiter sleeps its hour of Backoff")
	})
}

// slowSubscribe is a slowReply node whose subscriptions take 50ms.
type slowSubscribe struct{ slowReply }

func (n slowSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := (memory.RealClock{}).Sleep(ctx, 50*time.Millisecond); err != nil {
		return nil, err
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// The same when the release comes while the waiter subscribes, unheard: its
// attempt once subscribed, which finds the other Lock's attempt in flight,
// is retried once that attempt has ended.
func TestUnheardReleaseNotLostToAttemptInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = slowSubscribe{slowReply{memory.New(), &slow}}
		}
		l, lock, got := waitersOf(t, nodes)
		go lock() // refused, then subscribes for 50ms
		time.Sleep(5 * time.Millisecond)
		slow.Store(true)
		go lock() // refused at once, answered 100ms later
		time.Sleep(5 * time.Millisecond)
		slow.Store(false)
		releasedThenHeld(t, l, got, "the release, unheard while the waiter subscribed, was lost to the other Lock's attempt in flight")
	})
}

// gatedSet is a memory node whose SETs wait for gate whatever their context
// (a node that does not honour it), and which counts the subscriptions made
// to it.
type gatedSet struct {
	*memory.Node
	gate <-chan struct{}
	subs *atomic.Int32
}

func (n gatedSet) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	<-n.gate
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n gatedSet) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	n.subs.Add(1)
	return n.Node.Subscribe(ctx, key, notify)
}

// noSubscriptionRuns numbers the runs of TestNoSubscriptionAfterClose.
var noSubscriptionRuns atomic.Int64

// A Lock whose first attempt returns only after Close has returned (Close
// waits for it a node timeout at most) subscribes to nothing: Close cannot
// wait for what starts after it, so nothing starts once it has begun. The
// waiter then picks at random between its turn and Close; twenty rounds make
// the turn's pick all but certain.
func TestNoSubscriptionAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Addresses of this run's own: -count reruns it in one binary, and
		// the stores outlive the run with "k" held (each bubble's clock
		// starts at the same instant, so the key never expires). Not the
		// address of t: a rerun's T may be allocated where the last one was.
		run := fmt.Sprintf("%s/%d", t.Name(), noSubscriptionRuns.Add(1))
		addrs := []string{run + "/0", run + "/1", run + "/2"}
		open := func() []*memory.Node {
			nodes := make([]*memory.Node, len(addrs))
			for i, a := range addrs {
				n, err := memory.Open(a)
				require.NoError(t, err)
				nodes[i] = n
			}
			return nodes
		}
		var held []driver.Node
		for _, n := range open() {
			held = append(held, n)
		}
		_, err := newClient(t, held).TryLock(t.Context(), "k")
		require.NoError(t, err)
		for round := range 20 {
			gate := make(chan struct{})
			var subs atomic.Int32
			var nodes []driver.Node
			for _, n := range open() {
				nodes = append(nodes, gatedSet{n, gate, &subs})
			}
			c, err := redlock.New(nodes, redlock.WithNodeTimeout(10*time.Millisecond))
			require.NoError(t, err)
			res := make(chan error, 1)
			go func() {
				_, err := c.Lock(context.Background(), "k")
				res <- err
			}()
			synctest.Wait()
			require.NoError(t, c.Close())
			close(gate)
			require.ErrorIs(t, <-res, redlock.ErrClosed)
			synctest.Wait()
			require.Zero(t, subs.Load(), "round %d: the Lock subscribed after Close returned", round)
		}
	})
}

// failFirstSubscribe is a memory node whose first Subscribe fails, as a
// first pub/sub connection that takes longer than the node timeout does.
type failFirstSubscribe struct {
	*memory.Node
	failed *atomic.Bool
}

func (n failFirstSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if n.failed.CompareAndSwap(false, true) {
		return nil, errors.New("the first subscription fails")
	}
	return n.Node.Subscribe(ctx, key, notify)
}

// A waiter whose subscriptions all failed subscribes again while it polls,
// and then hears the release, rather than polling for the rest of its wait:
// here it polls every 100ms for 2s, then once an hour, and the key is
// released after 10s.
func TestWaiterSubscribesAgainWhilePolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = failFirstSubscribe{memory.New(), new(atomic.Bool)}
		}
		holder := newClient(t, nodes, redlock.WithTTL(time.Minute))
		l, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		c := newClient(t, nodes, redlock.WithBackoff(func(attempt int) time.Duration {
			if attempt <= 20 {
				return 100 * time.Millisecond
			}
			return time.Hour
		}))
		got := make(chan time.Time, 1)
		go func() {
			wl, err := c.Lock(t.Context(), "k")
			if err == nil {
				got <- time.Now()
				wl.Unlock(context.Background())
			}
		}()
		time.Sleep(10 * time.Second)
		releasedThenHeld(t, l, got, "the waiter never subscribed again after its first subscriptions failed, and polls once an hour")
	})
}
