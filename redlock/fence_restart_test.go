package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A delayed restart (down longer than the largest TTL) keeps the lock safe
// after a crash without persistence, but not the fencing tokens: the node
// comes back without its counters, and a later grant whose quorum meets the
// earlier token's quorum only on that node draws the same token again.
// SAFETY.md says so (only persisted counters keep tokens rising); this test
// asserts the repeat, so that the page would be wrong if it stopped.
func TestFencingDelayedRestartRepeatsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithFencing(), redlock.WithTTL(ttl))

		// A is granted by nodes 0-2 (3 and 4 down): its token is written
		// there only.
		mem[3].SetDown(true)
		mem[4].SetDown(true)
		a, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, a.Unlock(t.Context()))
		mem[3].SetDown(false)
		mem[4].SetDown(false)

		// Node 0 crashes without persistence and stays down longer than
		// the TTL, as SAFETY.md's delayed restart asks.
		mem[0].SetDown(true)
		mem[0].Forget()
		time.Sleep(ttl + 300*time.Millisecond)
		mem[0].SetDown(false)

		// B is granted by nodes 0, 3 and 4 (1 and 2 down: a minority).
		mem[1].SetDown(true)
		mem[2].SetDown(true)
		b, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, b.Unlock(t.Context()))
		mem[1].SetDown(false)
		mem[2].SetDown(false)

		require.Equal(t, a.Token(), b.Token(), "a delayed restart without persistence lost node 0's counter: B drew A's token again")
	})
}
