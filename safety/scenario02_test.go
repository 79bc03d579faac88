package safety_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Scenario 2: a minority of nodes killed, cut or blackholed. Locks are still
// granted, and the validity the client is given shrinks only by the time the
// acquisition took: Until is never earlier than start + TTL - drift, and the
// client does not wait for the faulty nodes (a blackholed node would cost the
// node timeout).
func TestScenario02MinorityDown(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 10 * time.Second
		nodeTimeout = 3 * time.Second // long, so that waiting for a faulty node would show
	)
	drift := time.Duration(float64(ttl)*redlock.DefaultDriftFactor) + 2*time.Millisecond
	faults := []struct {
		name  string
		apply func(t *testing.T, ns *nodes)
	}{
		{"killed", func(t *testing.T, ns *nodes) {
			require.NoError(t, ns.servers[0].Kill())
			require.NoError(t, ns.servers[3].Kill())
		}},
		{"cut", func(t *testing.T, ns *nodes) {
			require.NoError(t, ns.proxies[1].Cut())
			require.NoError(t, ns.proxies[4].Cut())
		}},
		{"blackholed", func(t *testing.T, ns *nodes) {
			require.NoError(t, ns.proxies[0].Blackhole())
			require.NoError(t, ns.proxies[2].Blackhole())
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			ns := startNodes(t, 5)
			clients := map[string]*redlock.Client{}
			for _, d := range redisDrivers {
				clients[d] = open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				warm(t, clients[d])
			}
			f.apply(t, ns)
			for _, d := range redisDrivers {
				t.Run(d, func(t *testing.T) {
					c := clients[d]
					key := "minority-" + f.name + "-" + d
					before := time.Now()
					l, err := c.TryLock(t.Context(), key)
					after := time.Now()
					require.NoError(t, err, "3 healthy nodes of 5 are a quorum")
					elapsed := after.Sub(before)
					require.False(t, l.Until().Before(before.Add(ttl-drift)),
						"Until %v is earlier than start + TTL - drift: validity shrank by more than the elapsed time", l.Until().Sub(before))
					require.Less(t, elapsed, nodeTimeout/2, "the client must not wait for the faulty minority")
					measured(t, "minority %s, %s: acquired in %v; validity left %v of TTL %v - drift %v",
						f.name, d, elapsed.Round(time.Microsecond), l.Until().Sub(after).Round(time.Microsecond), ttl, drift)

					require.Len(t, ns.holders(t, key), 3, "the key is on the three healthy nodes")
					require.NoError(t, l.Extend(t.Context(), ttl), "Extend needs the same quorum")
					require.NoError(t, l.Unlock(t.Context()))
					require.Empty(t, ns.holders(t, key))
				})
			}
		})
	}
}
