package safety_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// TestWaiterNoticeAfterItsLinksWereReset: B waits for a lock that A holds,
// with a backoff so long (20s) that only the release's notice (pub/sub) can
// wake it in time. While B waits, every one of B's connections is reset
// (its links cut, then healed at once: the subscriptions' connections go
// too); A's links stay healthy. Then A unlocks. B must be granted well
// before its backoff would retry (within 10s of A's Unlock): a waiter whose
// subscriptions died with their connections must still hear of the release.
// Through every driver.
func TestWaiterNoticeAfterItsLinksWereReset(t *testing.T) {
	t.Parallel()
	const (
		ttl     = 30 * time.Second
		backoff = 20 * time.Second
		bound   = 10 * time.Second
	)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "notice"
			ns, bLinks, b, la := holdBeforeWaiter(t, d, key, ttl, backoff)

			got := lockInBackground(t, b, key, 2*ttl)
			// B has made its first attempt and subscribed (on every node,
			// unless a subscription was slower than the node timeout: one
			// is enough, since a release is published on every node).
			require.Eventually(t, func() bool { return len(subscribed(t, ns, key)) > 0 },
				10*time.Second, 10*time.Millisecond, "B subscribed to the key's releases")
			for _, p := range bLinks {
				require.NoError(t, p.Cut())
			}
			for _, p := range bLinks {
				require.NoError(t, p.Heal())
			}
			// Give B's clients time to notice and reconnect (a fraction of
			// the bound); the release must wake B whether or not they did.
			time.Sleep(2 * time.Second)
			resubscribed := len(subscribed(t, ns, key))
			released := time.Now()
			require.NoError(t, la.Unlock(t.Context()))
			select {
			case r := <-got:
				require.NoError(t, r.err)
				wait := r.granted.Sub(released)
				measured(t, "%s: B granted %v after A's Unlock; %d of 5 nodes had B's subscription again 2s after the reset",
					d, wait.Round(time.Millisecond), resubscribed)
				require.Less(t, wait, bound, "B waited for its backoff: the release's notice was lost with its links")
				require.NoError(t, r.l.Unlock(t.Context()))
			case <-time.After(bound):
				t.Fatalf("%s: B not granted %v after A's Unlock (its backoff is %v): the notice was lost with B's reset links; %d of 5 nodes had B's subscription again 2s after the reset",
					d, bound, backoff, resubscribed)
			}
		})
	}
}

// TestWaiterNoticeLostInFlight: as TestWaiterNoticeAfterItsLinksWereReset,
// but B's links drop everything (blackhole) when A unlocks, so that the
// release's notice is lost on its way to B, and are healed 500ms later (the
// connections that lost data are closed, as TCP would). The lock is free
// from A's Unlock on; B is measured from the heal.
func TestWaiterNoticeLostInFlight(t *testing.T) {
	t.Parallel()
	const (
		ttl     = 30 * time.Second
		backoff = 20 * time.Second
		bound   = 10 * time.Second
	)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "notice-lost"
			ns, bLinks, b, la := holdBeforeWaiter(t, d, key, ttl, backoff)
			got := lockInBackground(t, b, key, 2*ttl)
			var subs []int
			require.Eventually(t, func() bool { subs = subscribed(t, ns, key); return len(subs) > 0 },
				10*time.Second, 10*time.Millisecond, "B subscribed to the key's releases")
			for _, p := range bLinks {
				require.NoError(t, p.Blackhole())
			}
			require.NoError(t, la.Unlock(t.Context()))
			require.Eventually(t, func() bool {
				for _, i := range subs {
					if bLinks[i].Dropped() == 0 {
						return false
					}
				}
				return true
			}, 10*time.Second, 5*time.Millisecond, "the notices reached B's links and were dropped")
			time.Sleep(500 * time.Millisecond)
			for _, p := range bLinks {
				require.NoError(t, p.Heal())
			}
			healed := time.Now()
			select {
			case r := <-got:
				require.NoError(t, r.err)
				measured(t, "%s: B granted %v after its links healed (the notice lost)", d, r.granted.Sub(healed).Round(time.Millisecond))
				require.NoError(t, r.l.Unlock(t.Context()))
			case <-time.After(bound):
				t.Fatalf("%s: B not granted %v after its links healed, the lock free all along (its backoff is %v): the lost notice left it waiting for its backoff",
					d, bound, backoff)
			}
		})
	}
}

// TestWaiterSubscribedOnAMinority: B's first subscriptions to four of the
// five nodes are slower than the node timeout (its links to them hold
// replies back 300ms), so B waits subscribed on node 0 alone; the links are
// then healed. A's link to node 0 is blackholed when A unlocks: the release
// is published on nodes 1-4, which B does not listen to, and B (backoff 20s)
// must still be granted within 10s, since nodes 1-4, a quorum, are free.
// Before the fix it waited for its next poll: only a waiter whose
// subscriptions had all failed subscribed again.
func TestWaiterSubscribedOnAMinority(t *testing.T) {
	t.Parallel()
	const (
		ttl     = 30 * time.Second
		backoff = 20 * time.Second
		bound   = 10 * time.Second
	)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			key := "notice-minority"
			ns, bLinks, b, la := holdBeforeWaiter(t, d, key, ttl, backoff, redlock.WithNodeTimeout(200*time.Millisecond))
			for _, p := range bLinks[1:] {
				require.NoError(t, p.SetLatency(0, 300*time.Millisecond))
			}
			got := lockInBackground(t, b, key, 2*ttl)
			require.Eventually(t, func() bool { return len(subscribed(t, ns, key)) > 0 },
				10*time.Second, 10*time.Millisecond, "B subscribed to the key's releases")
			time.Sleep(time.Second) // the late confirmations come and go
			for _, p := range bLinks {
				require.NoError(t, p.SetLatency(0, 0))
			}
			subs := subscribed(t, ns, key)
			require.NoError(t, ns.proxies[0].Blackhole())
			released := time.Now()
			_ = la.Unlock(t.Context()) // fails on node 0: the error is expected
			select {
			case r := <-got:
				require.NoError(t, r.err)
				measured(t, "%s: B subscribed on nodes %v; granted %v after A's Unlock", d, subs, r.granted.Sub(released).Round(time.Millisecond))
				require.NoError(t, r.l.Unlock(t.Context()))
			case <-time.After(bound):
				t.Fatalf("%s: B, subscribed on nodes %v, not granted %v after A's Unlock freed nodes 1-4 (its backoff is %v): the release was published where it did not listen",
					d, subs, bound, backoff)
			}
			require.NoError(t, ns.proxies[0].Heal())
		})
	}
}

// subscribed returns the indexes of the servers on which some client
// listens to key's release channel (PUBSUB SHARDNUMSUB), asking each
// directly; a server that does not answer counts as one without.
func subscribed(t *testing.T, ns *nodes, key string) []int {
	t.Helper()
	var out []int
	for i, s := range ns.servers {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		v, err := s.Do(ctx, "PUBSUB", "SHARDNUMSUB", driver.ReleaseChannel(key))
		cancel()
		if err != nil {
			continue // asked again by the caller's Eventually; no FailNow from its goroutine
		}
		if r, ok := v.([]any); ok && len(r) == 2 && r[1] != int64(0) {
			out = append(out, i)
		}
	}
	return out
}

// holdBeforeWaiter starts five nodes and two Clients over them through
// driver d, with TTL ttl and opts: A, which reaches them directly and holds
// key (returned: la), and B (returned: b), which reaches them through a
// proxy per node (bLinks) and polls with backoff between its attempts. Both
// are warm.
func holdBeforeWaiter(t *testing.T, d, key string, ttl, backoff time.Duration, opts ...redlock.Option) (ns *nodes, bLinks []*faultproxy.Proxy, b *redlock.Client, la *redlock.Lock) {
	t.Helper()
	ns = startNodes(t, 5)
	bLinks = faultproxy.NewProxies(t, ns.servers)
	a := open(t, d, ns.addrs(), append([]redlock.Option{redlock.WithTTL(ttl)}, opts...)...)
	b = open(t, d, redistest.Addrs(bLinks), append([]redlock.Option{redlock.WithTTL(ttl), redlock.WithBackoff(redlock.ConstantBackoff(backoff))}, opts...)...)
	ns.warmAll(t, a)
	warm(t, b)
	la, err := a.Lock(t.Context(), key)
	require.NoError(t, err)
	return ns, bLinks, b, la
}

// bgGrant is the outcome of a Lock made in the background: the lock, when it
// was granted (or gave up), and its error.
type bgGrant struct {
	l       *redlock.Lock
	granted time.Time
	err     error
}

// lockInBackground takes key through c.Lock on a goroutine, for at most d,
// and returns where its outcome comes.
func lockInBackground(t *testing.T, c *redlock.Client, key string, d time.Duration) <-chan bgGrant {
	got := make(chan bgGrant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		l, err := c.Lock(ctx, key)
		got <- bgGrant{l, time.Now(), err}
	}()
	return got
}
