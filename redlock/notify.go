package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// A watcher holds a waiter's subscriptions to the releases of one key, on
// every node that publishes them (driver.Notifier).
type watcher struct {
	released chan struct{} // receives when any node publishes a release
	// late receives when a subscription of watch's is confirmed after
	// watch returned (see watched): the waiter's attempt may have begun
	// before it, and a release published there meanwhile was not heard.
	// Apart from released, so that such a wake does not count as a
	// release's notice (see wakeSources.clearSpent).
	late chan struct{}
	// ctx is the subscriptions' life (see watch): no waiter's, ended by
	// close.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// holder carries the context values (a trace span, say) of the waiter
	// that has the turn and these subscriptions, without its end: the
	// subscriptions are made, and observed, under them. nil while no
	// waiter has them (see handOver, adopt).
	holder  context.Context
	watched bool      // watch has returned: later confirmations signal late
	lateAt  time.Time // when the last of those was confirmed
	cancels []func()
	retries []*time.Timer // by node: its resubscription waiting for its time, if any (see resubscribe)
}

// The gaps before a failed subscription is made again (see resubscribe):
// resubscribeGap after the first failure, doubling up to
// maxResubscribeGap, so that waiters do not ask a node that refuses
// subscriptions at every poll.
const (
	resubscribeGap    = time.Second
	maxResubscribeGap = 30 * time.Second
)

// watch subscribes to the releases of key on every Notifier node at once and
// returns when one subscription is confirmed, or when all have failed, ctx
// ended, Close began or the node timeout passed: a release published on any node wakes
// the waiter, since releases go to every node. Subscriptions confirmed later
// are kept too, and each signals w.late (see lockWait); a stalled node is never waited for beyond the first
// confirmation, nor a Subscribe that outlives its context (a client's own
// dial, say) beyond the node timeout. Polling remains the fallback. A
// subscription that fails is made again in the background while the waiter
// listens on fewer nodes than it must to hear every release (see
// resubscribe), also when every one failed, unless the node refused it for
// good (see subscribeOne).
func (c *Client) watch(ctx context.Context, key string) *watcher {
	w := &watcher{released: make(chan struct{}, 1), late: make(chan struct{}, 1)}
	defer w.watchReturned()
	// The subscriptions outlive the waiter when it leaves them to the next
	// (see handOver): they end when w closes, not with the waiter's ctx,
	// and they do not keep its values once it has left them (see adopt).
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.adopt(ctx)
	results := make(chan bool, len(c.nodes)) // buffered: no subscription waits for watch
	started := c.subscribeAll(key, w, results)
	if started == 0 {
		return w
	}
	bound := time.NewTimer(c.nodeTimeout)
	defer bound.Stop()
	for range started {
		select {
		case ok := <-results:
			if ok {
				return w
			}
		case <-bound.C:
			return w
		case <-ctx.Done():
			return w
		case <-c.closing:
			// The waiter's next step returns ErrClosed, and leaving
			// closes w: the subscriptions still being made end then,
			// rather than hold Close for their node timeout.
			return w
		}
	}
	return w
}

// subscribeAll starts a subscription to key's releases on every Notifier
// node, each kept by w once confirmed, and returns how many it started;
// results, when not nil, receives whether each was confirmed.
func (c *Client) subscribeAll(key string, w *watcher, results chan<- bool) int {
	started := 0
	for i, nn := range c.notifiers {
		if nn != nil && c.subscribeOne(key, w, i, nn, resubscribeGap, results, false) {
			started++
		}
	}
	return started
}

// subscribeOne starts a subscription to key's releases on node i in the
// background, kept by w once confirmed, and reports whether it started (not
// once Close has begun: a waiter that got its turn as Close began would
// otherwise subscribe after Close returned). results, when not nil,
// receives whether it was confirmed. One that fails is made again gap later
// (see resubscribe), unless the node refused it with an error retrying
// cannot fix (driver.PermanentCode); one made again (again) that is
// confirmed wakes the waiter, which may have missed a release there
// meanwhile. It is made under the context values of the waiter that has w
// (see adopt), ended when w closes or after the node timeout, and observed
// under those of the waiter that has w once the node answered.
func (c *Client) subscribeOne(key string, w *watcher, i int, nn driver.Notifier, gap time.Duration, results chan<- bool, again bool) bool {
	if !c.backgroundUnlessClosed(func() {
		sctx, cancel := context.WithTimeout(w.values(), c.nodeTimeout)
		unlink := context.AfterFunc(w.ctx, cancel)
		began := time.Now()
		stop, err := nn.Subscribe(sctx, key, w.released)
		unlink()
		cancel()
		if c.obs != nil {
			c.observeNode(w.values(), i, OpSubscribe, key[len(c.prefix):], began, err == nil, err)
		}
		kept, late := w.found(stop, err)
		if !kept && err == nil {
			stop()
		}
		if late && !again {
			// Confirmed after watch returned, the waiter's attempt maybe
			// under way: a release published here between that attempt's
			// SET and this confirmation was not heard. The waiter tries
			// once more if its attempt failed (a notice that comes before
			// an attempt begins is dropped by it, see heard), at most
			// once per attempt however many come.
			select {
			case w.late <- struct{}{}:
			default:
			}
		}
		if results != nil {
			results <- err == nil
		}
		switch {
		case err != nil && driver.PermanentCode(err) != "":
			// Refused for good (NOPERM: an ACL user without SSUBSCRIBE
			// or the channel; a server without SSUBSCRIBE): not asked
			// again in this wait, which polls the node as it polls a
			// node that does not publish. Asking again at the longest
			// gap at once would still cost the node an entry of its ACL
			// LOG every 30s for each waiter (a thousand waiters, 33 a
			// second) and never succeed until someone changes the
			// user's rights, which the next wait finds out; until then
			// the waiter only hears releases there later, at its polls.
		case err != nil:
			c.resubscribe(key, w, i, nn, gap)
		case again:
			// A release may have been published there while the waiter
			// did not listen: it tries once, as after its first
			// subscriptions.
			select {
			case w.released <- struct{}{}:
			default:
			}
		}
	}) {
		_, _ = w.found(nil, ErrClosed)
		return false
	}
	return true
}

// resubscribe subscribes to key's releases on node i again, after gap (then
// twice as long after each failure, up to maxResubscribeGap; each wait a random
// time between half the gap and the gap), unless w or ctx has
// ended by then or w already listens on enough nodes: len(nodes)-quorum+1,
// so that every set of nodes a release can reach while freeing a quorum
// meets them. A release is published only where it deleted the key, and a
// waiter whose first subscriptions failed on most nodes (slower than the node
// timeout, a node restarting) would otherwise miss a release that freed a
// quorum elsewhere and wait for its next poll. Once made, it wakes the
// waiter for one attempt (see subscribeOne). The wait costs a timer, not a
// goroutine. It replaces the waiter's earlier retry at its polls, which only
// a waiter without any subscription made, and which could no longer happen
// once every failed subscription had a retry of its own.
func (c *Client) resubscribe(key string, w *watcher, i int, nn driver.Notifier, gap time.Duration) {
	enough := len(c.nodes) - c.quorum + 1
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.cancels) >= enough {
		return
	}
	if w.retries == nil {
		w.retries = make([]*time.Timer, len(c.nodes))
	}
	// One per node at a time (the next is set once this one's subscription
	// has failed): a waiter of hours keeps one timer per failing node, not
	// one per retry.
	// At a random time in the second half of the gap (see jitter): the
	// waiters whose subscriptions failed together (a node down when they
	// began to wait) would otherwise all ask the node again at one
	// instant, each gap, and all wake for an attempt once it is back.
	w.retries[i] = time.AfterFunc(jitter(gap, gap), func() {
		w.mu.Lock()
		again := !w.closed && len(w.cancels) < enough
		w.mu.Unlock()
		if again {
			c.subscribeOne(key, w, i, nn, min(2*gap, maxResubscribeGap), nil, true)
		}
	})
}

// adopt gives w to the waiter whose context is ctx: the subscriptions made
// from now on, and their observations, carry its values (its trace span,
// say), not its end. A nil ctx takes w from the waiter that had it (see
// handOver): until the next adopts it, they carry no waiter's values, and w
// no longer keeps the context of a waiter that has left.
func (w *watcher) adopt(ctx context.Context) {
	if ctx != nil {
		ctx = context.WithoutCancel(ctx)
	}
	w.mu.Lock()
	w.holder = ctx
	w.mu.Unlock()
}

// values returns the context whose values w's subscriptions carry now (see
// adopt): never ended.
func (w *watcher) values() context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holder == nil {
		return context.Background()
	}
	return w.holder
}

// found ends a subscription being made, and records its cancel when it was
// confirmed (err nil), unless the watcher is already closed. It reports
// whether it kept stop, and whether it did so after watch returned.
func (w *watcher) found(stop func(), err error) (kept, late bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || w.closed {
		return false, false
	}
	w.cancels = append(w.cancels, stop)
	if w.watched {
		w.lateAt = time.Now()
	}
	return true, w.watched
}

// confirmedAfter reports whether a subscription signalled on late was
// confirmed after t, the start of the waiter's last attempt, by the
// monotonic clock: one confirmed at the same reading (the memory driver's
// nodes in a synctest bubble, whose clock stands still while they answer)
// left no time for a release to come unheard between that attempt's SET and
// the confirmation.
func (w *watcher) confirmedAfter(t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lateAt.After(t)
}

// watchReturned says that watch has returned: the subscriptions confirmed
// from now on signal late.
func (w *watcher) watchReturned() {
	w.mu.Lock()
	w.watched = true
	w.mu.Unlock()
}

// listens returns on how many nodes w's subscriptions are confirmed.
func (w *watcher) listens() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.cancels)
}

// close cancels every subscription, including those confirmed later.
func (w *watcher) close() {
	w.cancel()
	w.mu.Lock()
	w.closed = true
	w.holder = nil
	cancels := w.cancels
	w.cancels = nil
	for _, r := range w.retries {
		if r != nil {
			r.Stop()
		}
	}
	w.retries = nil
	w.mu.Unlock()
	for _, stop := range cancels {
		stop()
	}
}
