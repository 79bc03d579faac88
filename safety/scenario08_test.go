package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
)

// lockOnFirstThree makes client c lock key on nodes 0, 1 and 2 only, as in
// the seed's example (client 1 locks A, B and C, not D and E): nodes 3 and 4
// are cut during the attempt, and healed only once the attempt's calls to
// them, which may outlive TryLock by up to nodeTimeout, have ended. It
// returns the lock and the moment it was granted.
func lockOnFirstThree(t *testing.T, ns *nodes, c *redlock.Client, key string, nodeTimeout time.Duration) (*redlock.Lock, time.Time) {
	t.Helper()
	warm(t, c)
	for _, p := range ns.proxies[3:] {
		require.NoError(t, p.Cut())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := c.Lock(ctx, key)
	require.NoError(t, err)
	granted := time.Now()
	// A driver may still be reconnecting to a cut node to send its SET:
	// heal only after the node timeout has ended every such call.
	<-time.After(nodeTimeout + 100*time.Millisecond)
	for _, p := range ns.proxies[3:] {
		require.NoError(t, p.Heal())
	}
	require.Equal(t, []int{0, 1, 2}, ns.holders(t, key))
	return l, granted
}

// Scenario 8: a node crashes and restarts at once, without persistence,
// while a lock is held. Client A holds the lock on nodes 0, 1 and 2 (a bare
// quorum); node 2 crashes and comes back empty; client B then locks nodes 2,
// 3 and 4, a quorum too: two clients hold the lock at once. This test
// asserts the double grant: it documents a limit of Redlock, which assumes
// nodes that do not forget. Mitigations: scenario 9.
func TestScenario08RestartWithoutPersistence(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 30 * time.Second // nothing expires during the test
		nodeTimeout = time.Second
	)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			ns := startNodes(t, 5) // defaults: no RDB, no AOF
			key := "restart"
			a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
			la, grantedA := lockOnFirstThree(t, ns, a, key, nodeTimeout)

			require.NoError(t, ns.servers[2].Restart(t.Context()), "crash and immediate restart")
			require.Equal(t, []int{0, 1}, ns.holders(t, key), "the restarted node forgot A's key")

			b := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // far less than A's validity
			defer cancel()
			lb, err := b.Lock(ctx, key)
			grantedB := time.Now()
			require.NoError(t, err, "B gets a quorum of nodes 2, 3 and 4")
			require.True(t, time.Now().Before(la.Until()), "while A's validity still runs")
			overlaps := chaos.Overlaps([]chaos.Grant{grant("A", grantedA, la), grant("B", grantedB, lb)})
			require.Len(t, overlaps, 1, "double grant: A and B both hold the lock")
			measured(t, "restart without persistence, %s: double grant, A and B both hold for %v", d, overlaps[0].Duration().Round(time.Second))

			// A learns only when it next talks to a quorum.
			require.ErrorIs(t, la.Extend(t.Context(), ttl), redlock.ErrLockLost, "A holds 2 nodes of 5 now")
			require.NoError(t, lb.Unlock(t.Context()))
		})
	}
}
