package redlock

import (
	"context"
	"sync"
)

// leftovers counts, by node, the releases that a waiter's failed attempts
// left to the background (see abandon and settle): the nodes where its own
// key may still be set, so that its next attempt there is refused as if
// another Client held the lock. Those releases publish nothing (see
// releaseOnce), so no notice tells the waiter that they are done: cleared
// does, once none is left. One per Lock call that waits (see lockWait).
type leftovers struct {
	mu      sync.Mutex
	n       int
	byNode  []int
	cleared chan struct{} // buffered: receives when n drops to 0, taken back when it rises again
}

func newLeftovers(nodes int) *leftovers {
	return &leftovers{byNode: make([]int, nodes), cleared: make(chan struct{}, 1)}
}

// add counts a release of node i left to the background. A notice on
// cleared that the first one takes back: it said that the releases of
// earlier attempts had ended (during the attempt that leaves this one,
// say), and a waiter woken by it would find this one's key still set.
func (lo *leftovers) add(i int) {
	lo.mu.Lock()
	if lo.n == 0 {
		select {
		case <-lo.cleared:
		default:
		}
	}
	lo.n++
	lo.byNode[i]++
	lo.mu.Unlock()
}

// done ends a release counted by add: the node answered it (and the repeats
// it needed), or the key has expired, or Close ended it.
func (lo *leftovers) done(i int) {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	lo.n--
	lo.byNode[i]--
	if lo.n == 0 { // under mu, so that add takes back only a stale notice
		select {
		case lo.cleared <- struct{}{}:
		default:
		}
	}
}

// nodes returns the nodes with a release in the background, a bit each
// (MaxNodes is 64).
func (lo *leftovers) nodes() uint64 {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	if lo.n == 0 {
		return 0
	}
	var m uint64
	for i, k := range lo.byNode {
		if k > 0 {
			m |= 1 << i
		}
	}
	return m
}

// mayWin reports whether a quorum may grant the waiter's next attempt once
// its leftovers are released, judged by the failed attempt r whose SETs
// began while the nodes in had held leftovers of earlier attempts: the nodes
// that granted r (released by now), those whose outcome is unknown (failed,
// or not answered: their release is left to the background), and those that
// refused r while they may have held the waiter's own key. Only then is a
// wake at cleared worth an attempt; otherwise the waiter's own keys are not
// what keeps it from the lock (another Client holds it on a quorum), and a
// wake would only repeat a refused attempt each time its own clean-up ends,
// faster than its Backoff.
func (c *Client) mayWin(r *round, had uint64) bool {
	n := 0
	for i, s := range r.state {
		if s != refused || had&(1<<i) != 0 {
			n++
		}
	}
	return n >= c.quorum
}

// leftovers returns cc.left, made first for a Lock's or Do's attempt
// (cc.waits) that has none yet; nil for TryLock.
func (cc *callConfig) leftovers(nodes int) *leftovers {
	if cc.left == nil && cc.waits {
		cc.left = newLeftovers(nodes)
	}
	return cc.left
}

// waitPastOwn goes on collecting the replies of the acquisition r, which
// wait found decided without a quorum, when refusals by nodes in had (where
// the waiter's own key of an earlier attempt may still be set, see
// leftovers.nodes) helped decide it: such a refusal may be no other
// holder's, and the verdict must say what the other nodes did. It waits
// until a quorum granted (it returns true), or the other nodes' refusals
// and failures alone decide it, or every node answered, or ctx ends (the
// attempt then has no verdict, as one cut short before its nodes decided): each
// call is bounded as wait's are (the node timeout, or the bound of a node
// that queues), so the attempt waits no longer than one whose nodes had
// not decided it. Without it, a waiter whose nodes are mostly down was told
// the lock is held elsewhere (ErrNotObtained without ErrUnavailable) when
// its own key refused it on one live node and two down nodes failed at
// once, before the third's failure.
func (r *round) waitPastOwn(ctx context.Context, had uint64) bool {
	n, q := len(r.state), r.c.quorum
	for r.yes < q && r.pendingCount() > 0 {
		own := r.ownRefusals(had)
		if own == 0 || r.no-own > n-q {
			break
		}
		if rep, ok := r.ready(); ok {
			r.record(rep)
			continue
		}
		select {
		case v := <-r.replies:
			r.record(r.take(v))
		case <-ctx.Done():
			// Cut short: not a verdict (see outcome.finished), which the
			// refusals by its own key alone could not give; Lock keeps
			// that of its last attempt that finished.
			r.decided = false
			return false
		}
	}
	// Replies that came as ctx ended may be its errors, not the nodes'
	// (as in wait): a failure at the caller's deadline is no verdict.
	if callerEnded(ctx) {
		r.decided = false
	}
	return r.yes >= q
}

// ownRefusals counts the nodes that refused r among had, those where the
// waiter's own key of an earlier attempt may still have been set (see
// leftovers.nodes).
func (r *round) ownRefusals(had uint64) int {
	n := 0
	for i, s := range r.state {
		if s == refused && had&(1<<i) != 0 {
			n++
		}
	}
	return n
}
