package safety_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
)

// Scenario 10: a clock jump on one node. Redis expires keys by its wall
// clock, so a node whose clock is stepped forward drops a lock early; nothing
// on the client can see it. Redis' clock cannot be moved from a test, so this
// runs on memory nodes, each with its own fake clock: client A holds the lock
// on nodes 0, 1 and 2, node 2's clock jumps forward past the TTL (or, in the
// second case, the key is removed early on node 2 as by eviction or an
// operator), and client B gets a quorum of nodes 2, 3 and 4 while A's validity
// still runs. The test asserts the double grant.
func TestScenario10ClockJump(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	for _, c := range []struct {
		name string
		jump func(n *memory.Node, clock *memory.FakeClock, key string)
	}{
		{"clock stepped forward", func(_ *memory.Node, clock *memory.FakeClock, _ string) { clock.Advance(ttl + time.Second) }},
		{"key expired early", func(n *memory.Node, _ *memory.FakeClock, key string) { n.Delete(key) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			mem := make([]*memory.Node, 5)
			clocks := make([]*memory.FakeClock, 5)
			nodes := make([]driver.Node, 5)
			for i := range mem {
				clocks[i] = memory.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
				mem[i] = memory.New(memory.WithClock(clocks[i]))
				nodes[i] = mem[i]
			}
			// A and B are two clients of the same five nodes. The nodes are
			// closed once, by A's Client.
			a, err := redlock.New(nodes, redlock.WithTTL(ttl))
			require.NoError(t, err)
			t.Cleanup(func() { a.Close() })
			b, err := redlock.New(nodes, redlock.WithTTL(ttl))
			require.NoError(t, err)

			const key = "clock"
			la, err := a.TryLock(t.Context(), key)
			require.NoError(t, err)
			grantedA := time.Now()
			// The SETs that did not count towards the quorum land too.
			require.Eventually(t, func() bool {
				for _, n := range mem {
					if !n.Holds(key) {
						return false
					}
				}
				return true
			}, 5*time.Second, time.Millisecond)
			// As in the seed's example, A's lock stands on nodes 0, 1 and 2
			// only, as if its SETs to nodes 3 and 4 had failed.
			mem[3].Delete(key)
			mem[4].Delete(key)
			for i, n := range mem {
				require.Equal(t, i < 3, n.Holds(key), "A holds nodes 0, 1 and 2 only")
			}

			c.jump(mem[2], clocks[2], key)
			require.False(t, mem[2].Holds(key), "node 2 dropped A's key early")

			lb, err := b.TryLock(t.Context(), key)
			grantedB := time.Now()
			require.NoError(t, err, "B gets a quorum of nodes 2, 3 and 4")
			require.True(t, grantedB.Before(la.Until()), "while A's validity still runs")
			overlaps := chaos.Overlaps([]chaos.Grant{grant("A", grantedA, la), grant("B", grantedB, lb)})
			require.Len(t, overlaps, 1, "double grant: A and B both hold the lock")
			measured(t, "%s on one node: double grant, A and B both hold for %v", c.name, overlaps[0].Duration().Round(time.Second))
		})
	}
}
