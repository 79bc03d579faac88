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

// Over nodes that publish no releases, a waiter whose wake waits the random
// delay of a contended key (a split vote of its Client on the key within
// splitMemory) on its Backoff's timer, and whose attempt then finds a TryLock
// of its Client in flight (errAcquiring), tries once that TryLock has ended:
// the timer the delay spent is not what it waits on next. Before 0bf5219
// rewake handed the wake on over the release channel, nil here, and the
// waiter went back to waiting on that spent timer: the wait ended only with
// ctx (3 hours here) or Close.
//
// As TestWakeNotLostToAttemptInFlightWithoutNotifications's "leftovers
// cleared", with the key marked split just before the wake; the attempt
// before it took the node timeout (100ms), so the delay is drawn below 5ms.
// maxWakeJitter is redlock's cap on a wake's random delay.
const maxWakeJitter = 5 * time.Millisecond

func TestWakeNotLostToAttemptInFlightAfterContentionDelay(t *testing.T) {
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
		time.Sleep(time.Minute)
		synctest.Wait()
		require.True(t, mem[0].Delete("k") && mem[1].Delete("k"))
		faults[1].slowSets.Store(true)
		faults[1].holdReleases()
		time.Sleep(time.Hour) // its second attempt, which leaves its key on node 1
		synctest.Wait()
		require.True(t, mem[1].Holds("k") && !mem[0].Holds("k"), "the waiter's key is left on node 1 only")

		faults[1].slowSets.Store(false)
		tried := stalledTryLock(c, stall)
		require.True(t, redlock.SplitVoteNow(c, "k"), "the waiter has the turn")
		faults[1].letReleases()   // woken: the contention delay, then the TryLock in flight
		time.Sleep(maxWakeJitter) // the delay is shorter; the TryLock's SETs wait the node timeout
		synctest.Wait()
		attempts, _ := log.since(time.Time{})
		require.Equal(t, 4, attempts, "the woken attempt was made during the TryLock (its attempt counted too)")
		_, wakes := log.since(time.Time{})
		require.Equal(t, 1, wakes, "woken once its key on node 1 was released")
		ended := time.Now()
		stall.off()
		require.ErrorIs(t, <-tried, redlock.ErrNotObtained)
		require.NoError(t, <-got)
		require.Less(t, time.Since(ended), time.Minute, "the waiter got the free lock once the TryLock in flight had ended")
	})
}
