package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// Redlock's exclusion rests on any two quorums meeting on a node: that holds
// only among clients that use the same nodes. A client over 3 of the nodes
// (quorum 2) and one over all 5 (quorum 3), as during a change of the node
// list, both hold the lock: A was granted by nodes 0 and 1 (node 2 down for
// a moment), B by nodes 2, 3 and 4. SAFETY.md (operating guidance) and the
// package doc say that every client of a key must use the same nodes and how
// to change them; this test asserts the double grant, so that they would be
// wrong if it stopped.
func TestNodeListsThatDifferDoNotExclude(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		mem, nodes := memNodes(5)
		old := newClient(t, nodes[:3], redlock.WithTTL(ttl))
		grown := newClient(t, nodes, redlock.WithTTL(ttl))

		mem[2].SetDown(true)
		a, err := old.TryLock(t.Context(), "k")
		require.NoError(t, err, "A over nodes 0-2, granted by 0 and 1")
		synctest.Wait() // A's call to node 2 has failed
		require.False(t, mem[2].Holds("k"))
		mem[2].SetDown(false)

		b, err := grown.TryLock(t.Context(), "k")
		require.NoError(t, err, "B over nodes 0-4: granted by 2, 3 and 4 while A holds the lock")
		now := time.Now()
		require.True(t, now.Before(a.Until()) && now.Before(b.Until()),
			"both hold the lock: A until %v, B until %v, now %v", a.Until(), b.Until(), now)
		require.NoError(t, b.Unlock(t.Context()))
		require.NoError(t, a.Unlock(t.Context()))
	})
}

// A grant without WithFencing takes no token and raises no counter: its
// holder has nothing to show the protected resource, and the fenced grants
// around it draw their tokens as if it had not been. Fencing protects a
// resource only when every client of the key uses WithFencing and the
// resource refuses writes without a token (WithFencing's doc, README,
// SAFETY.md); this test asserts what they say.
func TestUnfencedGrantTakesNoToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		fenced := newClient(t, nodes, redlock.WithFencing())
		plain := newClient(t, nodes)
		fk := driver.FenceKey("k")

		a, err := fenced.Lock(t.Context(), "k")
		require.NoError(t, err)
		require.Equal(t, uint64(1), a.Token())
		require.NoError(t, a.Unlock(t.Context()))
		synctest.Wait() // A's calls still in flight have landed
		before := make([]uint64, len(mem))
		for i, m := range mem {
			before[i] = m.Fence(fk)
		}

		b, err := plain.Lock(t.Context(), "k")
		require.NoError(t, err)
		require.Zero(t, b.Token(), "a grant without WithFencing has no token")
		require.NoError(t, b.Unlock(t.Context()))
		synctest.Wait()
		for i, m := range mem {
			require.Equal(t, before[i], m.Fence(fk), "node %d: the unfenced grant changed the counter", i)
		}

		c, err := fenced.Lock(t.Context(), "k")
		require.NoError(t, err)
		require.Equal(t, uint64(2), c.Token(), "the next fenced grant follows A's token, not B's grant")
		require.NoError(t, c.Unlock(t.Context()))
	})
}

// A Lock is returned with any validity left, however little: an acquisition
// that took most of the TTL (a slow quorum, within the node timeout) leaves
// its holder a moment. TryLock's doc says so, and that the holder must look
// at Until (or Done) before it acts; this test asserts such a grant.
func TestGrantWithLittleValidityLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		mem, nodes := memNodes(3)
		for _, m := range mem {
			m.SetLatency(980 * time.Millisecond) // the drift allowance is 12ms
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(990*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		left := time.Until(l.Until())
		require.True(t, left > 0 && left <= 10*time.Millisecond, "validity left %v, want at most 10ms of the 1s TTL", left)
		for _, m := range mem {
			m.SetLatency(0)
		}
		require.NoError(t, l.Unlock(t.Context()))
	})
}
