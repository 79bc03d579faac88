package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Review 2, defect 1: the Client's slots go to the attempts that wait for
// one in the order they came, whether Do's first attempts (which wait in
// the admission queue) or TryLock's and Lock's (which waited on the slots'
// channel, where a slot given back never reached them while Do's were
// queued: a storm of Do's kept them waiting until their context ended).
func TestTryLockNotStarvedByDoStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		const nodeTimeout = time.Second
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout))
		for _, m := range mem {
			m.SetStalled(true) // every attempt holds its slot for the node timeout
		}
		var wg sync.WaitGroup
		for i := range 512 {
			wg.Go(func() { _, _ = c.TryLock(t.Context(), fmt.Sprint("hold", i)) })
		}
		synctest.Wait() // every slot is taken

		// A TryLock comes first, then many Do's: the first slot given back
		// (at the node timeout) is the TryLock's.
		ctx, cancel := context.WithTimeout(t.Context(), 3*nodeTimeout)
		defer cancel()
		var (
			terr error
			took time.Duration
		)
		start := time.Now()
		wg.Go(func() {
			_, terr = c.TryLock(ctx, "first")
			took = time.Since(start)
		})
		synctest.Wait()
		for i := range 2000 {
			wg.Go(func() {
				_ = c.Do(t.Context(), fmt.Sprint("storm", i), func(context.Context) error { return nil }, redlock.WithMaxAttempts(1))
			})
		}
		synctest.Wait()
		wg.Wait()
		// Its attempt ran (its nodes stalled: unavailable), at its turn.
		require.ErrorIs(t, terr, redlock.ErrUnavailable, "the TryLock got a slot before its context ended: %v", terr)
		require.Equal(t, 2*nodeTimeout, took, "admitted at the first slot given back, its round then took the node timeout")
	})
}
