package safety_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
)

// Scenario 9: the same crash, made safe by either mitigation.
//
//   - delayed restart: the node stays down longer than the TTL, so every key
//     it forgot had expired anyway; B gets the lock only after A's validity
//     ended, never during it.
//   - appendfsync always: the node comes back at once but with A's key, read
//     from its append-only file with its expiry time, and B is refused while
//     A holds.
func TestScenario09DelayedRestartOrAOF(t *testing.T) {
	t.Parallel()
	t.Run("delayed restart", func(t *testing.T) {
		t.Parallel()
		const (
			ttl         = 2 * time.Second
			nodeTimeout = 500 * time.Millisecond
		)
		for _, d := range redisDrivers {
			t.Run(d, func(t *testing.T) {
				t.Parallel()
				ns := startNodes(t, 5)
				key := "delayed-restart"
				a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				la, grantedA := lockOnFirstThree(t, ns, a, key, nodeTimeout)

				// B keeps trying from the moment of the crash.
				b := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout),
					redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
				type result struct {
					l       *redlock.Lock
					granted time.Time
					err     error
				}
				got := make(chan result, 1)
				require.True(t, time.Now().Before(la.Until()), "the crash comes while A holds the lock")
				require.NoError(t, ns.servers[2].Kill())
				go func() {
					l, err := b.Lock(t.Context(), key)
					got <- result{l, time.Now(), err}
				}()
				const down = ttl + 300*time.Millisecond // longer than any TTL
				require.NoError(t, ns.servers[2].RestartAfter(t.Context(), down))
				rb := <-got
				require.NoError(t, rb.err)
				require.False(t, rb.granted.Before(la.Until()), "B is granted only after A's validity ended")
				require.Empty(t, chaos.Overlaps([]chaos.Grant{grant("A", grantedA, la), grant("B", rb.granted, rb.l)}))
				measured(t, "delayed restart (down %v > TTL %v), %s: B granted %v after A's Until, no overlap",
					down, ttl, d, rb.granted.Sub(la.Until()).Round(time.Millisecond))
				// B's lock is left to expire: it may have already, while the
				// node was down.
			})
		}
	})

	t.Run("appendfsync always", func(t *testing.T) {
		t.Parallel()
		const (
			ttl = 30 * time.Second
			// Every write waits for an fsync: allow for a slow disk.
			nodeTimeout = 2 * time.Second
		)
		for _, d := range redisDrivers {
			t.Run(d, func(t *testing.T) {
				ns := startNodes(t, 5, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
				key := "aof-restart"
				a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				la, _ := lockOnFirstThree(t, ns, a, key, nodeTimeout)

				require.NoError(t, ns.servers[2].Restart(t.Context()), "crash (SIGKILL) and immediate restart")
				require.Equal(t, []int{0, 1, 2}, ns.holders(t, key), "the restarted node reloaded A's key")
				_, left, ok := pttl(t, ns.servers[2], key)
				require.True(t, ok)
				require.Greater(t, left, ttl/2, "with its expiry time")

				b := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				_, err := b.TryLock(t.Context(), key)
				require.ErrorIs(t, err, redlock.ErrNotObtained, "B gets nodes 3 and 4 only")
				require.True(t, time.Now().Before(la.Until()), "while A's validity runs")
				require.Subset(t, ns.holders(t, key), []int{0, 1, 2}, "A still holds a quorum")
				measured(t, "appendfsync always, %s: key reloaded with %v left, B refused while A held", d, left.Round(time.Second))
			})
		}
	})
}
