package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// setStall holds up the SETs of stalledSetNodes while it is on, and then
// fails them, not applied.
type setStall struct {
	mu   sync.Mutex
	gate chan struct{}
}

func (s *setStall) on() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *setStall) off() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

// stalledSetNode is a node that publishes no releases (driver.Node only, its
// optional interfaces hidden) and whose SETs wait while its stall is on, to
// fail once it is off.
type stalledSetNode struct {
	driver.Node
	stall *setStall
}

func (n stalledSetNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.stall.mu.Lock()
	gate := n.stall.gate
	n.stall.mu.Unlock()
	if gate != nil {
		<-gate
		return false, errors.New("not applied")
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// stalledTryLock turns stall on and starts a TryLock of "k" by c, which
// stays in flight, its SETs stalled, until stall is off; its error comes on
// the channel returned.
func stalledTryLock(c *redlock.Client, stall *setStall) <-chan error {
	stall.on()
	tried := make(chan error, 1)
	go func() {
		_, err := c.TryLock(context.Background(), "k")
		tried <- err
	}()
	synctest.Wait()
	return tried
}

// Over nodes that publish no releases, a waiter woken for an attempt that
// finds another attempt of its Client on the key in flight tries once that
// attempt has ended, as a waiter woken by a release's notice does (see
// TestWakeNotLostToAttemptInFlight), rather than waiting out its Backoff (an
// hour): the wake was lost, rewake handing it on over the channel of
// release notices, which such a waiter does not have.
//
// "leftovers cleared": the waiter's second attempt is granted on node 0,
// applied with its reply lost to the node timeout on node 1 (its release
// there is held up), refused on node 2 by another Client's key: a quorum
// may grant it once that release is done (mayWin). When it is done, a
// TryLock of the waiter's Client is in flight, its SETs stalled; the
// waiter's woken attempt finds it (errAcquiring). The TryLock then fails;
// the lock is free on nodes 0 and 1. "leftovers cleared, contended": the
// same, the wake first waiting its random delay for a key split by its
// Client within splitMemory (see wakeOnClearedIntoTryLock).
//
// "turn": a waiter that waited for the turn behind another Lock of its
// Client tries at once when it gets it (a release may have come unheard,
// see TestBackoffNoWaitAfterTurnWithoutNotifications); that attempt finds a
// TryLock of the Client in flight. The TryLock then fails; the lock is
// free.
func TestWakeNotLostToAttemptInFlightWithoutNotifications(t *testing.T) {
	for _, contended := range []bool{false, true} {
		name := "leftovers cleared"
		if contended {
			name += ", contended"
		}
		t.Run(name, func(t *testing.T) { wakeOnClearedIntoTryLock(t, contended) })
	}
	t.Run("turn", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem, _ := memNodes(3)
			stall := &setStall{}
			nodes := make([]driver.Node, len(mem))
			for i, m := range mem {
				nodes[i] = stalledSetNode{m, stall}
			}
			holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
			held, err := holder.TryLock(t.Context(), "k")
			require.NoError(t, err)
			c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithBackoff(func(int) time.Duration { return time.Hour }))
			first, cancelFirst := context.WithCancel(t.Context())
			defer cancelFirst()
			go c.Lock(first, "k") // has the turn
			synctest.Wait()
			got := make(chan error, 1)
			go func() {
				l, err := c.Lock(t.Context(), "k")
				if err == nil {
					err = l.Unlock(context.Background())
				}
				got <- err
			}()
			synctest.Wait() // waits for the turn
			time.Sleep(time.Minute)
			require.NoError(t, held.Unlock(t.Context())) // unheard: nothing publishes
			tried := stalledTryLock(c, stall)
			cancelFirst() // the turn passes: the waiter tries, and finds the TryLock in flight
			synctest.Wait()
			ended := time.Now()
			stall.off()
			require.ErrorIs(t, <-tried, redlock.ErrNotObtained)
			require.NoError(t, <-got)
			require.Less(t, time.Since(ended), time.Minute, "the waiter got the free lock after its Backoff, not once the TryLock in flight had ended")
		})
	})
}

// maxWakeJitter is redlock's cap on a wake's random delay.
const maxWakeJitter = 5 * time.Millisecond

// wakeOnClearedIntoTryLock is TestWakeNotLostToAttemptInFlightWithoutNotifications's
// "leftovers cleared". contended marks the key split just before the wake
// (a split vote of the Client on the key within splitMemory): the wake then
// waits its random delay (below 5ms: the attempt before it took the node
// timeout) on the Backoff's timer before its attempt finds the TryLock.
// Before 0bf5219, the waiter then waited on that spent timer, the wake
// handed on over a nil channel: the wait ended only with ctx (3 hours here).
func wakeOnClearedIntoTryLock(t *testing.T, contended bool) {
	synctest.Test(t, func(t *testing.T) {
		mem, _, faults := leftoverNodes()
		holdElsewhere(t, mem) // then kept on node 2 only
		stall := &setStall{}
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = stalledSetNode{leftoverNode{m, faults[i]}, stall}
		}
		log := &attemptLog{}
		c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(func(int) time.Duration { return time.Hour }), redlock.WithObserver(log))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Hour)
		defer cancel()
		got := make(chan error, 1)
		go func() {
			l, err := c.Lock(ctx, "k")
			if err == nil {
				err = l.Unlock(context.Background())
			}
			got <- err
		}()
		time.Sleep(time.Minute) // refused by every node, it waits its Backoff
		synctest.Wait()
		require.True(t, mem[0].Delete("k") && mem[1].Delete("k"))
		faults[1].slowSets.Store(true)
		faults[1].holdReleases()
		time.Sleep(time.Hour) // its second attempt, which leaves its key on node 1
		synctest.Wait()
		require.True(t, mem[1].Holds("k") && !mem[0].Holds("k"), "the waiter's key is left on node 1 only")
		attempts, wakes := log.since(time.Time{})
		require.Equal(t, 2, attempts)
		require.Zero(t, wakes)

		faults[1].slowSets.Store(false)
		tried := stalledTryLock(c, stall)
		if contended {
			require.True(t, redlock.SplitVoteNow(c, "k"), "the waiter has the turn")
		}
		faults[1].letReleases()   // the waiter is woken, and finds the TryLock in flight
		time.Sleep(maxWakeJitter) // past the random delay; the TryLock's SETs wait the node timeout
		synctest.Wait()
		require.False(t, mem[1].Holds("k"))
		attempts, wakes = log.since(time.Time{})
		require.Equal(t, 1, wakes, "woken once its key on node 1 was released")
		require.Equal(t, 4, attempts, "the woken attempt was made during the TryLock (its attempt counted too)")
		ended := time.Now()
		stall.off()
		require.ErrorIs(t, <-tried, redlock.ErrNotObtained)
		require.NoError(t, <-got)
		require.Less(t, time.Since(ended), time.Minute, "the waiter got the free lock after its Backoff, not once the TryLock in flight had ended")
	})
}
