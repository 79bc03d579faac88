package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// An Extend that starts with validity left but whose quorum answers only
// after Until has passed fails: the lock was over at Until (its holder had
// to stop then), and an Extend does not bring it back, although the nodes,
// which keep the key through the drift allowance, applied its PEXPIREs. It
// returns ErrLockLost, leaves Until where it was and closes Done, as Lock's
// doc says of a lock that is over. No test made an Extend judged after
// Until: with the check at its judgement removed, every other Extend test
// and the simulation passed. Done is left unarmed until the Extend has
// returned, since its timer would end the lock at Until by another path.
func TestExtendAnsweredAfterUntilFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl     = time.Second
			latency = 100 * time.Millisecond
		)
		mem, nodes := memNodes(3)
		// A drift allowance of 302ms: the nodes keep the key that long
		// past Until, so the Extend's PEXPIREs find it there.
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithDriftFactor(0.3), redlock.WithNodeTimeout(200*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		until := l.Until()
		for _, m := range mem {
			m.SetLatency(latency)
		}
		time.Sleep(time.Until(until) - latency/2) // the Extend starts with 50ms of validity left

		err = l.Extend(t.Context(), ttl)
		require.False(t, time.Now().Before(until), "the quorum answered after Until")
		require.ErrorIs(t, err, redlock.ErrLockLost, "an Extend judged after Until")
		// Its quorum answered 100ms into a 1s TTL: the error says that the
		// lock's validity ended meanwhile, not that extending took too long.
		assert.ErrorContains(t, err, "the lock's validity ended 50ms into this Extend")
		assert.NotContains(t, err.Error(), "extending took", "the Extend's own time left it validity")
		assert.Equal(t, until, l.Until(), "an Extend judged after Until moved Until")
		assert.True(t, isClosed(l.Done()), "the lock is over: Done is closed")
		// The Extend returned once a quorum answered; the third node
		// answers at the same instant of the bubble's clock, maybe
		// after: its PEXPIRE is applied once every goroutine waits
		// (before, the test read that node alone, and failed about one
		// run in three, "252ms is not greater than 500ms").
		synctest.Wait()
		for i, m := range mem {
			pttl, ok := m.PTTL("k")
			require.True(t, ok, "node %d", i)
			assert.Greater(t, pttl, ttl/2, "node %d applied the PEXPIRE: the key is still there", i)
		}
		require.ErrorIs(t, l.Extend(t.Context(), ttl), redlock.ErrLockLost, "and the lock stays over")

		for _, m := range mem {
			m.SetLatency(0)
		}
		require.NoError(t, l.Unlock(t.Context()), "Unlock still releases the key a quorum holds")
		synctest.Wait()
		assert.Equal(t, 0, holders(mem, "k"))
	})
}
