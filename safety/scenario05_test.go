package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Scenario 5: lost replies on a majority. During a network glitch the SETs
// reach three servers of five and are applied, but their replies are lost.
//
// OutlastsNodeTimeout: the glitch lasts past the node timeout. The client
// cannot tell "applied" from "not applied", refuses the lock, and sends the
// release to every node, the ones that failed included: the keys it did
// not know it had set are gone at once, and another client locks
// immediately instead of waiting out the TTL.
//
// ConnectionsBreak: the connections that lost replies break within the
// node timeout, as TCP connections do when they cannot deliver. The
// redigo, rueidis and valkey-go nodes send the SET again on a new
// connection, as driver.SetNXAgainScript, which finds the lock's value
// there and counts it as set: the lock is granted, as it would have been
// had the replies come (its validity counted from the attempt's start).
// goredis never resends: refused and released as above.
func TestScenario05LostReplies(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 30 * time.Second // waiting it out would be obvious
		nodeTimeout = 2 * time.Second  // the glitch ends before it, or after
	)
	for _, d := range redisDrivers {
		for _, breaks := range []bool{true, false} {
			name := d + "/OutlastsNodeTimeout"
			if breaks {
				name = d + "/ConnectionsBreak"
			}
			t.Run(name, func(t *testing.T) { lostReplies(t, d, breaks, ttl, nodeTimeout) })
		}
	}
}

func lostReplies(t *testing.T, d string, breaks bool, ttl, nodeTimeout time.Duration) {
	ns := startNodes(t, 5)
	key := "lost-" + d
	c := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
	ns.warmAll(t, c) // a new connection's handshake would lose its reply too
	sets := make([]int, 3)
	for i, p := range ns.proxies[:3] {
		sets[i] = commandCalls(t, ns.servers[i], "set")
		require.NoError(t, p.LoseReplies())
	}

	start := time.Now()
	done := make(chan error, 1)
	var held *redlock.Lock
	go func() {
		l, err := c.TryLock(t.Context(), key)
		held = l
		done <- err
	}()
	require.Eventually(t, func() bool {
		for i := range 3 {
			if commandCalls(t, ns.servers[i], "set") == sets[i] {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "the three servers applied the SETs")
	// A server counts a command before its reply reaches the proxy:
	// heal only once the replies are really lost, or one still on its
	// way would be delivered and the lock rightly granted. The SET's
	// reply is the only traffic on these links since warmAll.
	require.Eventually(t, func() bool {
		for _, p := range ns.proxies[:3] {
			if p.Dropped() == 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "the three proxies dropped the SETs' replies")
	var err error
	if !breaks {
		err = <-done // the calls on the three links time out
	}
	for _, p := range ns.proxies[:3] {
		require.NoError(t, p.Heal()) // the glitch ends: the connections that lost replies are closed
	}
	if breaks {
		err = <-done
	}
	answered := time.Now()
	if breaks && d != "goredis" {
		require.NoError(t, err, "the SETs sent again after the connections broke find the lock's value: granted")
		require.Len(t, ns.holders(t, key), 5, "every node holds the key")
		require.NoError(t, held.Unlock(t.Context()))
		measured(t, "lost replies on 3 of 5, the connections broken, %s: granted %v after the attempt began (TTL %v)",
			d, answered.Sub(start).Round(time.Millisecond), ttl)
		return
	}
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	require.Eventually(t, func() bool { return len(ns.holders(t, key)) == 0 }, 5*time.Second, time.Millisecond,
		"the release reaches every node, those whose replies were lost included")
	cleared := time.Since(answered)

	other := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	l, err := other.Lock(ctx, key)
	require.NoError(t, err, "another client locks without waiting out the %v TTL", ttl)
	waited := time.Since(answered)
	require.NoError(t, l.Unlock(t.Context()))
	how := "the connections broken"
	if !breaks {
		how = "past the node timeout"
	}
	measured(t, "lost replies on 3 of 5, %s, %s: refused %v after the attempt began; keys gone from every node %v later; the next client had the lock %v after the refusal (TTL %v)",
		how, d, answered.Sub(start).Round(time.Millisecond), cleared.Round(time.Millisecond), waited.Round(time.Millisecond), ttl)
}
