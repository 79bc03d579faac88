package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// Scenario 6: nodes paused (SIGSTOP) in the middle of an acquisition and
// resumed after the client gave up. Three nodes of five are paused, so that
// the client cannot reach a quorum; its SETs wait in the paused servers'
// sockets and are applied when they resume: late ("phantom") SETs. They are
// never a safety violation, since the client that sent them does not hold
// the lock and no one else can set the key while they stand; their cost is
// liveness, measured here as the time another client waits for the lock
// after the nodes resume.
//
//   - client gave up: the client refused the lock at the node timeout and
//     sent its release to every node. A release sent on another connection
//     than the SET (or behind a handshake) can be executed before the late
//     SET, so the client repeats the release to a node whose SET had an
//     unknown outcome until the node has answered two in a row, for at most a TTL after the failure: the late keys go as
//     soon as the nodes resume, and the next client waits about nothing.
//     The nodes stay paused for two node timeouts, so that the releases sent
//     meanwhile time out too, and resume within the TTL; resumed after it
//     (the check that the SETs are queued can take seconds on a busy
//     machine), the repeats have ended and a late key costs up to a TTL.
//   - client gone: the client's host vanished while it waited (its
//     connections cut, its process gone: closed), so no release ever
//     arrives: the phantom keys block the lock for a full TTL from the
//     moment they are applied.
func TestScenario06PausedNodeLateSet(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	pause := func(t *testing.T, servers []*redistest.Server) {
		require.NoError(t, forEach(servers, (*redistest.Server).Pause))
	}
	resume := func(t *testing.T, servers []*redistest.Server) time.Time {
		require.NoError(t, forEach(servers, (*redistest.Server).Resume))
		return time.Now()
	}
	// queued waits, at most bound, until each paused server has unread
	// requests: the SETs.
	queued := func(t *testing.T, servers []*redistest.Server, bound time.Duration) {
		require.True(t, queuedWithin(servers, bound), "the SETs are queued at the paused servers")
	}
	// lockAfter measures how long a new client waits for the lock after the
	// nodes resumed, and checks that it then holds it alone.
	// The late keys, of the TTL phantomTTL, are gone within it.
	lockAfter := func(t *testing.T, d string, addrs []string, key string, resumed time.Time, phantomTTL time.Duration) time.Duration {
		b := open(t, d, addrs, redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second))
		ctx, cancel := context.WithTimeout(t.Context(), 3*phantomTTL)
		defer cancel()
		l, err := b.Lock(ctx, key)
		require.NoError(t, err)
		waited := time.Since(resumed)
		_, err = open(t, d, addrs, redlock.WithTTL(ttl)).TryLock(t.Context(), key)
		require.ErrorIs(t, err, redlock.ErrNotObtained, "the lock is held by one client only")
		require.NoError(t, l.Unlock(t.Context()))
		return waited
	}

	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			t.Run("client gave up", func(t *testing.T) {
				const nodeTimeout = 500 * time.Millisecond
				ns := startNodes(t, 5)
				key := "late-set"
				a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				ns.warmAll(t, a)
				pause(t, ns.servers[:3])
				_, err := a.TryLock(t.Context(), key)
				gaveUp := time.Now()
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				queued(t, ns.servers[:3], 10*time.Second)
				// The scenario: the nodes stay paused until the releases the
				// client sent them in the background have timed out too.
				time.Sleep(time.Until(gaveUp.Add(2 * nodeTimeout)))
				resumed := resume(t, ns.servers[:3])
				waited := lockAfter(t, d, ns.addrs(), key, resumed, ttl)
				paused := resumed.Sub(gaveUp)
				if paused < ttl-nodeTimeout {
					require.Less(t, waited, ttl/2, "the repeated releases remove the late keys once the nodes resume")
				} else {
					// Reading /proc/net/tcp (queued) can take seconds on a
					// busy machine: the nodes resumed after the repeats'
					// window, and a late key may cost a TTL as before.
					require.Less(t, waited, ttl+2*time.Second, "a late SET blocks the lock for at most a TTL")
				}
				measured(t, "paused nodes, client gave up, %s: resumed %v after the client gave up; the next client waited %v after the nodes resumed (TTL %v)",
					d, paused.Round(time.Millisecond), waited.Round(time.Millisecond), ttl)
			})

			t.Run("client gone", func(t *testing.T) {
				// The client must still be waiting for the paused nodes when
				// it vanishes: had it given up, it would have sent them its
				// releases. Finding its SETs in the paused servers' sockets
				// (queued) can take seconds on a busy machine, so the node
				// timeout is long (goredis's reads end at 3s whatever the
				// deadline), the wait for the SETs is bounded below it, and
				// the set-up starts again on new nodes, up to three times,
				// when the machine was too slow for it; the late keys live
				// a TTL longer than the node timeout.
				const (
					nodeTimeout = 5 * time.Second
					queuedBound = 2 * time.Second
					lateTTL     = 6 * time.Second
					attempts    = 3
				)
				key := "late-set"
				var (
					ns   *nodes
					a    *redlock.Client
					done chan error
				)
				for try := 1; ; try++ {
					ns = startNodes(t, 5)
					a = open(t, d, ns.addrs(), redlock.WithTTL(lateTTL), redlock.WithNodeTimeout(nodeTimeout))
					ns.warmAll(t, a)
					pause(t, ns.servers[:3])
					c, ch := a, make(chan error, 1)
					done = ch
					go func() {
						_, err := c.TryLock(context.Background(), key)
						ch <- err
					}()
					waiting := queuedWithin(ns.servers[:3], queuedBound)
					select {
					case err := <-done:
						waiting = false
						t.Logf("attempt %d: the client gave up before it vanished (%v)", try, err)
					default:
					}
					if waiting {
						break
					}
					t.Logf("attempt %d: the SETs were not found queued at the paused servers within %v, with the client still waiting", try, queuedBound)
					require.Less(t, try, attempts, "the scenario needs the client waiting when its SETs are queued")
					resume(t, ns.servers[:3])
					a.Close()
				}
				for _, p := range ns.proxies { // the client's host vanishes
					require.NoError(t, p.Cut())
				}
				require.ErrorIs(t, <-done, redlock.ErrNotObtained)
				// The client's process is gone too: nothing repeats its
				// releases (Close ends the repeats).
				require.NoError(t, a.Close())
				resumed := resume(t, ns.servers[:3])
				require.Eventually(t, func() bool {
					h := ns.holders(t, key)
					return len(h) >= 3 && h[0] == 0 && h[1] == 1 && h[2] == 2
				}, 5*time.Second, time.Millisecond, "the paused nodes applied the late SETs, and no release reached them")

				other := faultproxy.NewProxies(t, ns.servers) // the other clients' own way to the servers
				waited := lockAfter(t, d, redistest.Addrs(other), key, resumed, lateTTL)
				require.Greater(t, waited, lateTTL/2, "the phantom keys block the lock for about a TTL")
				require.Less(t, waited, lateTTL+2*time.Second, "and no longer")
				measured(t, "paused nodes, client gone, %s: the next client waited %v after the nodes resumed (TTL %v)",
					d, waited.Round(time.Millisecond), lateTTL)
			})
		})
	}
}

// queuedWithin reports whether each of the paused servers had unread
// requests within bound.
func queuedWithin(servers []*redistest.Server, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		all := true
		for _, s := range servers {
			if n, err := s.Unread(); err != nil || n == 0 {
				all = false
				break
			}
		}
		if all {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
