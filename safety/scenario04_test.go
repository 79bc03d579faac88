package safety_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Scenario 4: latency on some nodes.
//
// First, replies delayed on a majority, so that every quorum includes a slow
// node: the validity the client is told (Until) never exceeds what the key
// really has left on a quorum of servers, read with PEXPIRETIME right after
// TryLock returns. The client measures validity from before it sent the
// SETs, so a delayed reply only makes it more conservative.
//
// Second, replies delayed by more than the validity the TTL allows (but less
// than the node timeout): every node grants the lock, but the elapsed time
// has eaten the TTL, so the client refuses it and releases the keys.
func TestScenario04Latency(t *testing.T) {
	t.Parallel()
	t.Run("validity never exceeds the keys' PTTL", func(t *testing.T) {
		t.Parallel()
		const ttl = 5 * time.Second
		ns := startNodes(t, 5)
		clients := map[string]*redlock.Client{}
		for _, d := range redisDrivers {
			clients[d] = open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second))
			warm(t, clients[d])
		}
		for i, d := range []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond} {
			require.NoError(t, ns.proxies[i].SetLatency(d/2, d)) // requests a little late, replies late
		}
		for _, d := range redisDrivers {
			t.Run(d, func(t *testing.T) {
				c := clients[d]
				key := "latency-" + d
				start := time.Now()
				l, err := c.TryLock(t.Context(), key)
				require.NoError(t, err)
				elapsed := time.Since(start)
				require.GreaterOrEqual(t, elapsed, 150*time.Millisecond, "the quorum needed a slow node")

				covered := 0
				margin := time.Duration(1<<63 - 1)
				until := l.Until().Round(0) // by the wall clock, the servers' on loopback
				for _, s := range ns.servers {
					expires, ok := expireTime(t, s, key)
					if !ok {
						continue
					}
					if !expires.Before(until) {
						covered++
						margin = min(margin, expires.Sub(until))
					}
				}
				require.GreaterOrEqual(t, covered, c.Quorum(),
					"a quorum of servers must keep the key at least until the Until the client was told")
				measured(t, "latency, %s: acquired in %v, told validity %v; %d nodes keep the key past Until, the closest by %v",
					d, elapsed.Round(time.Millisecond), l.Until().Sub(start).Round(time.Millisecond), covered, margin.Round(time.Millisecond))
				require.NoError(t, l.Unlock(t.Context()))
			})
		}
	})

	t.Run("refused when elapsed time eats the TTL", func(t *testing.T) {
		t.Parallel()
		// A drift factor of 0.5 leaves a wide window between "no validity
		// left" and "node timeout", so that a busy machine cannot turn the
		// refusal into a timeout: validity = 4s - elapsed - 2002ms, so a
		// quorum that answers after 2100ms grants a lock with no validity
		// left, far within the 3900ms node timeout.
		const (
			ttl         = 4 * time.Second
			driftFactor = 0.5
			nodeTimeout = 3900 * time.Millisecond
			latency     = 2100 * time.Millisecond
		)
		drift := time.Duration(float64(ttl)*driftFactor) + 2*time.Millisecond
		ns := startNodes(t, 5)
		clients := map[string]*redlock.Client{}
		for _, d := range redisDrivers {
			clients[d] = open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithDriftFactor(driftFactor), redlock.WithNodeTimeout(nodeTimeout))
			warm(t, clients[d])
		}
		for _, p := range ns.proxies[:3] {
			require.NoError(t, p.SetLatency(0, latency))
		}
		for _, d := range redisDrivers {
			t.Run(d, func(t *testing.T) {
				t.Parallel()
				key := "eaten-" + d
				start := time.Now()
				_, err := clients[d].TryLock(t.Context(), key)
				elapsed := time.Since(start)
				require.ErrorIs(t, err, redlock.ErrNotObtained, "the quorum answered after the validity was used up")
				var ne *redlock.NodeError
				require.False(t, errors.As(err, &ne), "every node answered: refused for lack of validity, not for failures: %v", err)
				require.GreaterOrEqual(t, elapsed, ttl-drift)
				require.Eventually(t, func() bool { return len(ns.holders(t, key)) == 0 }, 5*time.Second, time.Millisecond,
					"the granted keys are released")
				measured(t, "latency %v on 3 of 5, %s: every node granted, refused for no validity left (TTL %v - drift %v = %v); TryLock returned after %v, release included",
					latency, d, ttl, drift, ttl-drift, elapsed.Round(time.Millisecond))
			})
		}
	})
}
