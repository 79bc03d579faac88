package safety_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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
			ns, bLinks, b, la, _ := holdBeforeWaiter(t, d, key, ttl, backoff)

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
			unlockSlow(t, la)
			select {
			case r := <-got:
				require.NoError(t, r.err)
				wait := r.granted.Sub(released)
				measured(t, "%s: B granted %v after A's Unlock; %d of 5 nodes had B's subscription again 2s after the reset",
					d, wait.Round(time.Millisecond), resubscribed)
				require.Less(t, wait, bound, "B waited for its backoff: the release's notice was lost with its links")
				unlockSlow(t, r.l)
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
//
// The links are healed only once the release is known to have been lost:
// A's key is on every server before B waits (so the release publishes on
// every server), B's subscriptions are read from the servers after the
// blackhole, when nothing B sends reaches them any more, and the heal waits
// until the key is gone from every server (the release, and its publish,
// done) and each link to a server that still has B's subscription dropped
// data. The subscriptions the test read before the blackhole could
// include, on a loaded machine, ones B had given up (confirmed later than
// the node timeout) and was unsubscribing (seen: servers that showed B's
// subscription before the blackhole and none after it): a server then
// published nothing to B, nothing else crossed that link, and the wait for
// its drops failed. The other way to miss: a server where A's SET had not
// landed publishes nothing either, so the test waits for A's key on every
// server, and when a SET never lands (given up: slower than the node
// timeout), expects notices only from the servers that have it.
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
			ns, bLinks, b, la, bSubs := holdBeforeWaiter(t, d, key, ttl, backoff)
			// A's SETs beyond the quorum may still be on their way.
			var aHolds []int
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if aHolds = ns.holders(t, key); len(aHolds) == len(ns.servers) || time.Now().After(deadline) {
					break
				}
			}
			require.GreaterOrEqual(t, len(aHolds), 3, "A's key on a quorum of servers: %v", aHolds)
			got := lockInBackground(t, b, key, 2*ttl)
			// B's subscriptions as the servers hold them once its links
			// drop everything: nothing B sends reaches a server any more,
			// so they stay as they are. A subscription a server showed
			// before may be gone by then (one B gave up, confirmed later
			// than the node timeout, which it unsubscribed): then the
			// links are healed and B's subscriptions awaited again.
			var subs []int
			for deadline := time.Now().Add(10 * time.Second); len(subs) == 0; {
				require.Eventually(t, func() bool { return len(subscribed(t, ns, key)) > 0 },
					10*time.Second, 10*time.Millisecond, "B subscribed to the key's releases")
				for _, p := range bLinks {
					require.NoError(t, p.Blackhole())
				}
				if subs = subscribed(t, ns, key); len(subs) > 0 {
					break
				}
				require.True(t, time.Now().Before(deadline), "B kept no subscription the servers saw")
				for _, p := range bLinks {
					require.NoError(t, p.Heal())
				}
			}
			before := make([]int64, len(bLinks))
			for i, p := range bLinks {
				before[i] = p.Dropped()
			}
			// The release's replies may come later than A's node timeout on
			// a loaded machine (its links are healthy): the wait below
			// sees the key gone from every server, which is what counts.
			unlockSlow(t, la)
			// Polled here, not by require.Eventually, whose condition
			// may still run when it gives up: the failure names the state.
			var lost, left, holds []int
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				holds = nil
				for _, i := range ns.holders(t, key) {
					if slices.Contains(aHolds, i) {
						holds = append(holds, i) // A's key not released yet
					}
				}
				now := subscribed(t, ns, key)
				lost, left = nil, nil // of subs: links that dropped data since the Unlock; servers that publish nothing to B
				for _, i := range subs {
					switch {
					case !slices.Contains(aHolds, i):
						left = append(left, i) // nothing to publish there
					case bLinks[i].Dropped() > before[i]:
						lost = append(lost, i)
					case !slices.Contains(now, i):
						// Gone with an unsubscription sent before the
						// blackhole: nothing was published to B there.
						left = append(left, i)
					}
				}
				if len(holds) == 0 && len(lost)+len(left) == len(subs) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: 10s after A's Unlock, A's key (on %v) still on servers %v; B subscribed on %v, its links dropped data on %v, no notice to B from %v (its subscription gone, or no key of A's): the release's notices did not all reach B's links",
						d, aHolds, holds, subs, lost, left)
				}
			}
			require.NotEmpty(t, lost, "B subscribed on %v, no longer on %v: no notice was lost", subs, left)
			time.Sleep(500 * time.Millisecond)
			for _, p := range bLinks {
				require.NoError(t, p.Heal())
			}
			healed := time.Now()
			select {
			case r := <-got:
				require.NoError(t, r.err)
				measured(t, "%s: B granted %v after its links healed (the notices lost on %v of its subscriptions on %v)",
					d, r.granted.Sub(healed).Round(time.Millisecond), lost, subs)
				unlockSlow(t, r.l)
			case <-time.After(bound):
				t.Fatalf("%s: B not granted %v after its links healed, the lock free all along (its backoff is %v): the lost notice left it waiting for its backoff; B's subscriptions:\n%v",
					d, bound, backoff, bSubs)
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
			ns, bLinks, b, la, bSubs := holdBeforeWaiter(t, d, key, ttl, backoff, redlock.WithNodeTimeout(200*time.Millisecond))
			for _, p := range bLinks[1:] {
				require.NoError(t, p.SetLatency(0, 300*time.Millisecond))
			}
			got := lockInBackground(t, b, key, 2*ttl)
			// Healed as soon as B's first subscriptions have answered (B
			// sees them: its Observer), those to nodes 1-4 failed. The
			// test slept a second after a server first showed B's
			// subscription, and on a loaded machine that second came
			// late: B's subscriptions made again in the meantime failed
			// too, each failure doubling the gap before the next
			// (resubscribe), and the one after the heal came too late.
			require.Eventually(t, func() bool { return bSubs.answered(0, 1, 2, 3, 4) },
				10*time.Second, time.Millisecond, "B's first subscriptions answered")
			for _, p := range bLinks {
				require.NoError(t, p.SetLatency(0, 0))
			}
			subs := bSubs.listening()
			require.NoError(t, ns.proxies[0].Blackhole())
			released := time.Now()
			_ = la.Unlock(t.Context()) // fails on node 0: the error is expected
			select {
			case r := <-got:
				require.NoError(t, r.err)
				measured(t, "%s: B subscribed on nodes %v; granted %v after A's Unlock", d, subs, r.granted.Sub(released).Round(time.Millisecond))
				unlockSlow(t, r.l)
			case <-time.After(bound):
				t.Fatalf("%s: B, subscribed on nodes %v, not granted %v after A's Unlock freed nodes 1-4 (its backoff is %v): the release was published where it did not listen; B's subscriptions:\n%v",
					d, subs, bound, backoff, bSubs)
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
func holdBeforeWaiter(t *testing.T, d, key string, ttl, backoff time.Duration, opts ...redlock.Option) (ns *nodes, bLinks []*faultproxy.Proxy, b *redlock.Client, la *redlock.Lock, bSubs *subscriptions) {
	t.Helper()
	ns = startNodes(t, 5)
	bLinks = faultproxy.NewProxies(t, ns.servers)
	bSubs = newSubscriptions(key, redistest.Addrs(bLinks))
	a := open(t, d, ns.addrs(), append([]redlock.Option{redlock.WithTTL(ttl)}, opts...)...)
	b = open(t, d, redistest.Addrs(bLinks), append([]redlock.Option{redlock.WithTTL(ttl), redlock.WithBackoff(redlock.ConstantBackoff(backoff)), redlock.WithObserver(bSubs)}, opts...)...)
	ns.warmAll(t, a)
	warm(t, b)
	la, err := a.Lock(t.Context(), key)
	require.NoError(t, err)
	return ns, bLinks, b, la, bSubs
}

// subscriptions is an Observer of a Client's subscriptions to one key's
// releases, as the Client sees them: each Subscribe's outcome, by node, and
// (for the failure messages) the wakes and the attempts.
type subscriptions struct {
	redlock.NopObserver
	key   string
	began time.Time
	nodes map[string]int // a node's name (its address) -> its index

	mu     sync.Mutex
	ok     map[int]int // confirmed subscriptions, by node
	failed map[int]int // failed ones, by node
	log    []string    // every subscription and wake, for the failure messages
}

func newSubscriptions(key string, addrs []string) *subscriptions {
	o := &subscriptions{key: key, began: time.Now(), nodes: map[string]int{}, ok: map[int]int{}, failed: map[int]int{}}
	for i, a := range addrs {
		o.nodes[a] = i
	}
	return o
}

// NodeCall records a subscription's outcome.
func (o *subscriptions) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation != redlock.OpSubscribe || e.Key != o.key {
		return
	}
	i, known := o.nodes[e.Node]
	if !known {
		i = -1
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e.OK {
		o.ok[i]++
	} else {
		o.failed[i]++
	}
	o.log = append(o.log, fmt.Sprintf("%v: subscription on node %d (%s), after %v: ok %v, %v",
		time.Since(o.began).Round(time.Millisecond), i, e.Node, e.Duration.Round(time.Millisecond), e.OK, e.Err))
}

// Attempt records each attempt's outcome and votes.
func (o *subscriptions) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	if e.Key != o.key {
		return ctx, nil
	}
	return ctx, func(d redlock.AttemptDone) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.log = append(o.log, fmt.Sprintf("%v: attempt %d, after %v: %s, votes %+v",
			time.Since(o.began).Round(time.Millisecond), d.Attempt, d.Duration.Round(time.Millisecond), d.Outcome, d.Votes))
	}
}

// Wake records a wake.
func (o *subscriptions) Wake(_ context.Context, e redlock.Wake) {
	if e.Key != o.key {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = append(o.log, fmt.Sprintf("%v: woken for attempt %d", time.Since(o.began).Round(time.Millisecond), e.Attempt))
}

// answered reports whether the subscriptions on the nodes have each
// answered, confirmed or failed, at least once.
func (o *subscriptions) answered(nodes ...int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, i := range nodes {
		if o.ok[i]+o.failed[i] == 0 {
			return false
		}
	}
	return true
}

// listening returns the nodes on which a subscription was confirmed.
func (o *subscriptions) listening() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for i := range 5 {
		if o.ok[i] > 0 {
			out = append(out, i)
		}
	}
	return out
}

// String is the log of the subscriptions and wakes.
func (o *subscriptions) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.log, "\n")
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
