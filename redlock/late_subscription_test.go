package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A waiter's own subscription confirmed after its attempt began (within the
// node timeout, after the first one: see Client.Lock) wakes it once: a
// release published there before the confirmation was not heard, and the
// waiter would otherwise sleep through it until its Backoff (an hour here).
// It wakes it once only: the waiter does not try again and again.
func TestLateSubscriptionWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		subGate := make(chan struct{})
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = m
			if i > 0 {
				nodes[i] = lateConfirm{m, subGate}
			}
		}
		// Another holder has the key on nodes 1 and 2, a quorum; node 0 is
		// free, so no release is published there.
		for _, m := range mem[1:] {
			ok, err := m.SetNX(t.Context(), "k", "other", 10*time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		log := &attemptLog{}
		c := newClient(t, nodes, redlock.WithTTL(2*time.Hour), redlock.WithNodeTimeout(time.Hour), redlock.WithObserver(log),
			redlock.WithBackoff(func(int) time.Duration { return time.Hour }))
		got := make(chan *redlock.Lock, 1)
		go func() {
			if l, err := c.Lock(t.Context(), "k"); err == nil {
				got <- l
			}
		}()
		synctest.Wait() // listens on node 0; its attempts refused; waits
		time.Sleep(time.Second)
		began := time.Now()
		// Released where the waiter does not listen yet.
		for _, m := range mem[1:] {
			ok, err := m.ReleaseNotify(t.Context(), "k", "other")
			require.NoError(t, err)
			require.True(t, ok)
		}
		synctest.Wait()
		close(subGate) // now confirmed on nodes 1 and 2
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case l := <-got:
			attempts, _ := log.since(began)
			require.Equal(t, 1, attempts, "one attempt after the late subscriptions")
			require.NoError(t, l.Unlock(t.Context()))
		default:
			t.Fatalf("the waiter slept through a release published before its late subscriptions were confirmed (%d of %d nodes hold the key)", holders(mem, "k"), len(mem))
		}
	})
}

// Subscriptions confirmed late while the key stays held wake the waiter
// once each, not again and again: one attempt for each, then its Backoff.
func TestLateSubscriptionWakesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		gates := []chan struct{}{nil, make(chan struct{}), make(chan struct{})}
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = m
			if i > 0 {
				nodes[i] = lateConfirm{m, gates[i]}
			}
			ok, err := m.SetNX(t.Context(), "k", "other", 10*time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		log := &attemptLog{}
		c := newClient(t, nodes, redlock.WithTTL(2*time.Hour), redlock.WithNodeTimeout(time.Hour), redlock.WithObserver(log),
			redlock.WithBackoff(func(int) time.Duration { return time.Hour }))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := c.Lock(ctx, "k")
			require.ErrorIs(t, err, redlock.ErrNotObtained)
		}()
		synctest.Wait()
		time.Sleep(time.Second)
		began := time.Now()
		for i, g := range gates[1:] {
			close(g)
			time.Sleep(time.Minute)
			synctest.Wait()
			attempts, wakes := log.since(began)
			require.Equal(t, i+1, attempts, "attempts after %d late subscriptions", i+1)
			require.Equal(t, i+1, wakes, "wakes after %d late subscriptions", i+1)
		}
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		attempts, _ := log.since(began)
		require.Equal(t, 2, attempts, "no more attempts until the Backoff's")
		cancel()
		<-done
	})
}
