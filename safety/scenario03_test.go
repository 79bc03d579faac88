package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Scenario 3: a majority of nodes cut (connections closed at once) or
// blackholed (connections accepted, nothing answered). The lock is refused,
// at worst at about the node timeout, and the keys the attempt set on the
// healthy minority are released at once: those that had answered before
// TryLock returns, the others as soon as they answer. Once the network
// heals, another client locks at once instead of waiting out the TTL.
func TestScenario03MajorityCut(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 30 * time.Second // long: a key left behind would block the next client
		nodeTimeout = 500 * time.Millisecond
	)
	for _, fault := range []string{"cut", "blackholed"} {
		t.Run(fault, func(t *testing.T) {
			for _, d := range redisDrivers {
				t.Run(d, func(t *testing.T) {
					ns := startNodes(t, 5)
					key := "majority-" + fault
					c := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
					warm(t, c)
					for _, p := range ns.proxies[:3] {
						if fault == "cut" {
							require.NoError(t, p.Cut())
						} else {
							require.NoError(t, p.Blackhole())
						}
					}

					start := time.Now()
					_, err := c.TryLock(t.Context(), key)
					elapsed := time.Since(start)
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					var ne *redlock.NodeError
					require.ErrorAs(t, err, &ne, "each faulty node's cause is in the chain")
					if fault == "blackholed" {
						require.ErrorIs(t, err, context.DeadlineExceeded)
						require.GreaterOrEqual(t, elapsed, nodeTimeout*9/10, "a blackholed node is given up at the node timeout")
					}
					require.Less(t, elapsed, nodeTimeout+2*time.Second, "refused within about the node timeout")
					require.Eventually(t, func() bool { return len(ns.holders(t, key)) == 0 }, nodeTimeout+2*time.Second, time.Millisecond,
						"the keys set on the healthy minority are released at once")
					cleared := time.Since(start)
					measured(t, "majority %s, %s: refused in %v (node timeout %v); no key left %v after the attempt began",
						fault, d, elapsed.Round(time.Millisecond), nodeTimeout, cleared.Round(time.Millisecond))

					for _, p := range ns.proxies[:3] {
						require.NoError(t, p.Heal())
					}
					ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // far below the TTL
					defer cancel()
					other := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
					l, err := other.Lock(ctx, key)
					require.NoError(t, err, "nothing was left behind: another client locks without waiting out the TTL")
					unlockSlow(t, l)
				})
			}
		})
	}
}
