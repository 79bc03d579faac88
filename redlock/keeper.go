package redlock

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// keeperWindow is how far ahead of its time an extension may go with others
// due then, so that the extensions due at about the same time go together.
const keeperWindow = 20 * time.Millisecond

// keeperFanout is how many calls to one node an extension group keeps in
// flight at once; a node that pipelines (driver.Queuer) sends them as
// batches.
const keeperFanout = 64

// A keeper extends the locks that Do holds: one per Client, in place of a
// goroutine and a timer per lock. It keeps the locks in a heap ordered by
// the time of their next extension, with one timer for the earliest. When it
// fires, the extensions due within keeperWindow go together, as a group: to
// each node at once, the group's calls in flight together, so that a node
// that pipelines sends them as a few batches, before the acquisitions that
// wait (they are urgent: driver.WithUrgent). Each lock of the group is then
// judged alone, as Lock.Extend judges it, as soon as its votes decide.
type keeper struct {
	c *Client

	mu sync.Mutex
	// started is signaled (on mu) when the start of an extension that a
	// remove waits for is done (see kept.state): rarely, since a remove
	// waits only for its own lock's extension, and only while it starts.
	// A sync.Cond: a wait on it is durable in a testing/synctest bubble.
	started sync.Cond

	heap   keptHeap
	timer  *time.Timer // fires at the earliest due; nil until the first add
	closed bool        // stop ran: nothing is scheduled any more
	// live links every lock of a Do that is not done with it (see add
	// and remove), in the heap or not, through kept.prev and kept.next:
	// Close releases those left (see releaseHeld).
	live *kept
	// sealed is set by releaseHeld: Close releases the locks of the Do's
	// not done with them, and a Do done after it sends nothing, since the
	// nodes are about to be closed.
	sealed bool
	// releasing counts the releases under way that Close waits for before
	// it closes the nodes: those of the Do's done with their lock before
	// sealed, and Close's own.
	releasing *tracker
}

// A kept is one lock held through Do.
type kept struct {
	l      *Lock
	ttl    time.Duration // of each extension
	every  time.Duration // between extensions
	cancel context.CancelCauseFunc
	ectx   context.Context // the extensions' context: Do's, without its cancellation
	fctx   context.Context // fn's, canceled by cancel
	obs    *doObs          // the observers' Do; nil without observers

	// Guarded by keeper.mu:
	due   time.Time // of the next extension, or, while one is in flight, the end of the validity
	index int32     // in the heap; -1 when out of it (a heap of 2^31 locks would take 300 GB of kept)

	// state orders the start of the lock's extension (keeper.begin: its
	// check that Do still keeps the lock, Lock.beginExtend, the
	// observers' Extend start) and Do's removal of the lock
	// (keeper.remove): an extension is either started, and reported,
	// before Do removes its lock, and so before its Unlock starts, or not
	// started at all. The lock's own, so that a slow start (an observer's)
	// holds no other lock's Do. keptRemoved, keptStarting, keptWaiting.
	state atomic.Uint32

	// Guarded by keeper.mu:
	inflight bool // an extension is in flight, or none can raise the validity before it ends: due is the validity's end
	stopped  bool // Do is done with it
	given    bool // Close stopped the extensions before Do was done with it
	linked   bool // in keeper.live

	// Only Do's goroutine uses these (beside index, state and the flags
	// above, so that they share two words: a kept stays in the 160-byte
	// size class, with one per lock held through Do; see TestKeptSize):
	finished bool // Do finished with the lock
	lost     bool // finish found the lock lost (valid once finished)
	reported bool // Do's end was reported to the observers

	// Guarded by keeper.mu:
	prev, next *kept         // in keeper.live
	byClose    chan struct{} // Close releases the lock (see releaseHeld): closed once it did; nil unless
	closeErr   error         // the release's error, read once byClose is closed
}

// The bits of kept.state.
const (
	keptRemoved  = 1 << iota // Do removed the lock (see keeper.remove): an extension in flight is moot, none starts
	keptStarting             // the keeper is starting an extension of the lock (see keeper.begin)
	keptWaiting              // a remove waits, on keeper.started, for that start to be done
)

// keptHeap orders kept locks by due.
type keptHeap []*kept

func (h keptHeap) Len() int           { return len(h) }
func (h keptHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h keptHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}
func (h *keptHeap) Push(x any) {
	k := x.(*kept)
	k.index = int32(len(*h))
	*h = append(*h, k)
}
func (h *keptHeap) Pop() any {
	old := *h
	k := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	k.index = -1
	return k
}

// keeperOf returns the Client's keeper, made on first use.
func (c *Client) keeperOf() *keeper {
	c.keeperOnce.Do(func() {
		k := &keeper{c: c, releasing: newTracker()}
		k.started.L = &k.mu
		c.keeper = k
	})
	return c.keeper
}

// add starts extending l every every to ttl, the first time every from now;
// cancel is called with ErrLockLost when the lock is lost. ectx is the
// context of the extensions.
func (k *keeper) add(ectx context.Context, l *Lock, ttl, every time.Duration, cancel context.CancelCauseFunc) *kept {
	e := &kept{l: l, ttl: ttl, every: every, cancel: cancel, ectx: ectx, index: -1}
	now := k.c.now()
	due := k.dueBy(e, now.Add(every), now)
	k.mu.Lock()
	k.link(e)
	k.scheduleLocked(e, due)
	k.mu.Unlock()
	return e
}

// link puts e in k.live. k.mu is held.
func (k *keeper) link(e *kept) {
	e.next, e.linked = k.live, true
	if k.live != nil {
		k.live.prev = e
	}
	k.live = e
}

// unlink takes e out of k.live, if it is in it. k.mu is held.
func (k *keeper) unlink(e *kept) {
	if !e.linked {
		return
	}
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		k.live = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.prev, e.next, e.linked = nil, nil, false
}

// dueBy returns when e's first extension is due: at want, or sooner when the
// lock's validity would end before an extension sent then could return (an
// acquisition that took most of the TTL leaves less validity than an
// extension interval): a node timeout before Until, and not before now.
func (k *keeper) dueBy(e *kept, want, now time.Time) time.Time {
	if last := e.l.Until().Add(-k.c.nodeTimeout); last.Before(want) {
		if last.Before(now) {
			return now
		}
		return last
	}
	return want
}

// Who releases the lock of a Do done with it (see remove).
const (
	releaseDo     = iota // Do, now: Close waits for it
	releaseClose         // Close, which took it over (see releaseHeld)
	releaseNobody        // nobody: the nodes are being closed
)

// remove stops extending e's lock. An extension in flight still finishes; it
// changes nothing that matters, since the lock is released next. It reports
// whether Close had stopped the extensions before, and who releases the
// lock: Do, registered in k.releasing (it calls released once done) so that
// Close waits for it, unless Close took the release over, or has begun to
// close the nodes. It waits for the start of the lock's extension, if one
// is starting (see kept.state); no other lock's.
func (k *keeper) remove(e *kept) (given bool, by int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for s := e.state.Or(keptRemoved) | keptRemoved; s&keptStarting != 0; s = e.state.Load() {
		// Woken by begin's end under k.mu, which the wait holds until
		// it sleeps: if begin ends before the flag is set, the swap
		// fails and the loop finds the start done.
		if s&keptWaiting != 0 || e.state.CompareAndSwap(s, s|keptWaiting) {
			k.started.Wait()
		}
	}
	e.stopped = true
	if e.index >= 0 {
		heap.Remove(&k.heap, int(e.index))
	}
	k.unlink(e)
	switch {
	case e.byClose != nil:
		by = releaseClose
	case k.sealed:
		by = releaseNobody
	default:
		k.releasing.add(1)
	}
	return e.given, by
}

// released ends a release that remove left to Do.
func (k *keeper) released() { k.releasing.done() }

// releaseHeld is Close's release of the locks of Do, once the extensions
// have stopped and before the nodes are closed. It releases the locks of the
// Do's not done with them (their fn, canceled, has not returned: it may
// never), each as Do would (Lock.Unlock, whose calls are bounded by the node
// timeout), at most maxRounds at once, as Unlock's releases run, from as many
// goroutines, and hands each one's error to its Do. It then waits for those
// releases and for those that Do's done with their lock began before
// (remove), for at most d, and for at most d more for their node calls that
// the releases' quorums left running. A Do done with its lock after this
// sends nothing: the nodes are being closed. If an observer panicked (or
// called runtime.Goexit) in a release, it returns the panic's value, for
// Close to go on with once the nodes are closed.
func (k *keeper) releaseHeld(d time.Duration) (pv any, unwound bool) {
	k.mu.Lock()
	k.sealed = true
	var held []*kept
	for e := k.live; e != nil; {
		next := e.next
		k.unlink(e)
		if e.index >= 0 {
			heap.Remove(&k.heap, int(e.index))
		}
		if !e.stopped { // out of the heap when stop ran: an extension was in flight
			k.give(e)
		}
		e.byClose = make(chan struct{})
		held = append(held, e)
		e = next
	}
	k.releasing.add(len(held))
	k.mu.Unlock()
	var mu sync.Mutex
	release := func(e *kept) {
		defer k.releasing.done()
		defer close(e.byClose)
		ok := false
		defer func() {
			if ok {
				return
			}
			v := recover()
			e.closeErr = errors.Join(ErrLockLost, errUnwound)
			mu.Lock()
			if !unwound {
				pv, unwound = v, true
			}
			mu.Unlock()
		}()
		// Ended already: by give, or before Close (see kept.finish).
		e.closeErr = e.l.Unlock(e.ectx)
		ok = true
	}
	// At most maxRounds goroutines, as many as the releases of a Client
	// that run at once (see Lock.Unlock), take the locks from held in
	// turn: one per lock would start thousands at once, all but
	// maxRounds of them only to wait for their turn.
	var next atomic.Int64 // the index in held of the next lock to release
	var work func()
	work = func() {
		// An observer that calls runtime.Goexit in a release ends this
		// goroutine: another one takes over the rest of held.
		drained := false
		defer func() {
			if !drained {
				go work()
			}
		}()
		for {
			i := next.Add(1) - 1
			if i >= int64(len(held)) {
				drained = true
				return
			}
			release(held[i])
		}
	}
	for range min(len(held), maxRounds) {
		go work()
	}
	k.releasing.wait(d)
	k.c.inflight.wait(d)
	mu.Lock()
	defer mu.Unlock()
	return pv, unwound
}

// errExtendMoot is the error of an extension of Do that was in flight when
// Do was done with the lock: whatever the nodes answered, the lock is being
// released (an extension that finds it released is no loss).
var errExtendMoot = fmt.Errorf("redlock: Do released the lock while its extension was in flight: %w", context.Canceled)

// scheduleLocked puts e, which is out of the heap, in it at due and arms the
// timer if e is now the earliest. Once the keeper is stopped (Close), it
// stops e instead and cancels its Do's context with ErrLockLost: nothing
// would extend the lock, nor cancel the context when the validity ends. k.mu
// is held.
func (k *keeper) scheduleLocked(e *kept, due time.Time) {
	if e.stopped {
		return
	}
	if k.closed {
		k.give(e)
		return
	}
	e.due = due
	heap.Push(&k.heap, e)
	if e.index == 0 {
		d := max(due.Sub(k.c.now()), 0)
		if k.timer == nil {
			k.timer = time.AfterFunc(d, k.fire)
		} else {
			k.timer.Reset(d)
		}
	}
}

// give stops e's extensions for Close: its lock ends now, as EndClosed,
// unless its validity ended first (then it expired: see Lock.endAs), and
// its Do's context is canceled with ErrLockLost. Ended here, not at its
// release, which may come after the validity has passed: the lock is
// Close's loss, not an expiry. k.mu is held.
func (k *keeper) give(e *kept) {
	e.stopped, e.given = true, true
	e.l.endAs(endClosed)
	e.cancel(ErrLockLost) // runs no callback here: AfterFuncs get goroutines
}

// fire takes the locks due within keeperWindow, re-arms the timer for the
// next, ends the locks whose validity passed and extends the others as a
// group. A lock whose extension is in flight stays in the heap at the end of
// its validity, so that its Do's context is canceled then if the extension
// has not succeeded by that time.
func (k *keeper) fire() {
	now := k.c.now()
	var group, over []*kept
	k.mu.Lock()
	for len(k.heap) > 0 {
		e := k.heap[0]
		if e.due.After(now.Add(keeperWindow)) || e.inflight && e.due.After(now) {
			break
		}
		heap.Pop(&k.heap)
		until := e.l.Until()
		switch {
		case !now.Before(until):
			e.stopped = true
			over = append(over, e)
		case e.inflight:
			k.scheduleLocked(e, until) // lowered by the extension in flight
		default:
			e.inflight = true
			group = append(group, e)
		}
	}
	if len(k.heap) > 0 && !k.closed {
		k.timer.Reset(max(k.heap[0].due.Sub(now), 0))
	}
	if len(group) > 0 {
		// Work that Close waits for, as background work is: registered
		// under k.mu, so that a group taken before stop is waited for and
		// none is taken after it (the heap is empty then).
		k.c.inflight.add(1)
		k.c.running.add(1)
	}
	k.mu.Unlock()
	for _, e := range over { // its validity ended without a successful extension
		k.lost(e)
	}
	if len(group) > 0 {
		k.extend(group)
		k.c.inflight.done()
		k.c.running.done()
	}
}

// extend extends the locks of group, each to its own TTL, and schedules
// each one's next extension: every after this one started if it succeeded,
// a quarter of that if it failed without finding the lock lost (or when the
// validity ends, if sooner); a lock found lost is ended and its Do's context
// canceled.
func (k *keeper) extend(group []*kept) {
	c := k.c
	start := c.now()
	type job struct {
		e     *kept
		r     *round
		bound time.Time // start + ttl - drift: a call not sent by then is moot
		ok    bool
		done  bool
		calls int  // node calls returned
		fails bool // one of them returned an error (see Lock.extendReturned)
		// With observers: the Extend's context and end, as Lock.Extend
		// reports them.
		octx  context.Context
		end   func(ExtendDone)
		began time.Time
		// The contexts of its node calls, on nodes that queue and on the
		// others: the group's, with the values of octx (see callCtx).
		qvctx, vctx callCtx
	}
	jobs := make([]job, 0, len(group))
	var latest time.Time
	for _, e := range group {
		j := job{e: e, octx: e.ectx}
		var ok bool
		if j.bound, j.octx, j.end, j.began, ok = k.begin(e, start); !ok {
			continue
		}
		if j.bound.After(latest) {
			latest = j.bound
		}
		j.r = c.newRound(e.ectx)
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return
	}
	// One context for the whole group on the nodes that queue: they start
	// the node timeout when they send a call. A node that does not queue
	// gets the group's calls from keeperFanout goroutines, the others
	// waiting their turn here: each call gets the node timeout from when it
	// is sent (see send below), not from the group's start. Every node gets
	// at most keeperFanout of the group's calls at once, queueing or not.
	// A call still waiting a node timeout after the group's start is not
	// sent if the other nodes have decided its lock's extension meanwhile:
	// a slow node (one far away, which answers a few keeperFanout calls per
	// node timeout, queueing or not) would otherwise keep the extensions in
	// flight past the next ones. (Before that, a decided extension's calls
	// are still sent, so that every healthy node keeps the key.)
	decided := make([]atomic.Bool, len(jobs))
	// Without values: each call gets those of its own lock (see callCtx).
	base := driver.WithUrgent(context.Background())
	var (
		qctx    context.Context
		qcancel context.CancelFunc = func() {}
	)
	if c.queued {
		qctx, qcancel = context.WithDeadline(base, latest)
		qctx = driver.WithNetworkTimeout(qctx, c.nodeTimeout)
	}
	for j := range jobs {
		jobs[j].qvctx = callCtx{qctx, jobs[j].octx}
		jobs[j].vctx = callCtx{base, jobs[j].octx}
	}
	type vote struct {
		job  int
		node int
		ok   bool
		err  error
	}
	votes := make(chan vote, len(jobs)*len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		// A call that timed out says that the node does not answer only
		// if the node has answered none of the group's calls since that
		// call was sent: the group's later calls are then not sent to it
		// (errKeeperStalled), since each wave of keeperFanout calls would
		// wait the node timeout on a stalled server, and the group's calls
		// would stay in flight until the locks' bound. A node that
		// answered other calls meanwhile is alive: the call timed out
		// because it waited (behind a slow batch, or for a goroutine of a
		// loaded process to read its reply), and the node keeps getting
		// the group's calls. A node that stops answering mid-group is
		// skipped once a call sent after its last answer has timed out.
		//
		// Locks whose extension the other nodes decide no longer depend on
		// it: those calls are not sent either once a node timeout has
		// passed since the group's start (errKeeperDecided), which is when
		// the stalled node's first wave times out, the wave this lets
		// through too; and calls in flight no longer cap the validity that
		// the next extensions of the same TTL give (Lock.finishExtend).
		// With one of five nodes stalled,
		// TestKeeperPausedQueuedNodeKeepsLocks keeps every lock without
		// this check on nodes that queue, and loses them only without
		// errKeeperDecided on them and with the old cap too. What the
		// check still does: an extension that needs the stalled node's
		// vote (a Client of one node; the other nodes down, or split on
		// the lock) fails after the node's first wave, rather than after
		// its own call has waited its turn behind the group's earlier
		// ones and then a node timeout, and the stalled node is not sent
		// those calls (TestKeeperLiveNodeTimeoutKeepsGettingCalls counts
		// them through the batcher). It keeps no more locks for that: such
		// an extension is tried again a quarter interval later (see
		// finish), so that a node that resumes in between, shortly before
		// the validity ends, loses locks that calls still waiting on it
		// would have kept; without the check, the calls that time out in
		// the group's later waves are tried again as late. A call that the
		// batcher failed unsent (its queue, behind an earlier group's
		// timeout) counts as timed out here.
		var (
			stalled  atomic.Bool
			answered atomic.Uint64 // the group's calls the node answered (no error)
		)
		timedOut := func(seen uint64) {
			if answered.Load() == seen {
				stalled.Store(true)
			}
		}
		// send extends job j's lock on node i. A node that queues bounds
		// a call's time on the network by the node timeout: the call timed
		// out if it failed with context.DeadlineExceeded while the group's
		// context had not ended (the batch it was in timed out, or the
		// node failed it behind one that did).
		send := func(j *job) (bool, error) {
			if stalled.Load() {
				return false, errKeeperStalled
			}
			seen := answered.Load()
			ok, err := n.Extend(&j.qvctx, j.e.l.key, j.e.l.value, j.e.ttl)
			switch {
			case err == nil:
				answered.Add(1)
			case errors.Is(err, context.DeadlineExceeded) && qctx.Err() == nil:
				timedOut(seen)
			}
			return ok, err
		}
		if !c.queuers[i] {
			send = func(j *job) (bool, error) {
				switch {
				case c.quit.Err() != nil: // Close ended the background work
					return false, errKeeperClosed
				case stalled.Load():
					return false, errKeeperStalled
				case !c.now().Before(j.bound):
					return false, errKeeperMoot
				}
				seen := answered.Load()
				ctx, cancel := context.WithTimeout(&j.vctx, c.nodeTimeout)
				defer cancel()
				ok, err := n.Extend(ctx, j.e.l.key, j.e.l.value, j.e.ttl)
				switch {
				case err == nil:
					answered.Add(1)
				case ctx.Err() != nil:
					timedOut(seen)
				}
				return ok, err
			}
		}
		next := make(chan int, len(jobs))
		for j := range jobs {
			next <- j
		}
		close(next)
		for range min(len(jobs), keeperFanout) {
			c.inflight.add(1)
			wg.Go(func() {
				defer c.inflight.done()
				for j := range next {
					if decided[j].Load() && c.now().Sub(start) >= c.nodeTimeout {
						votes <- vote{j, i, false, errKeeperDecided}
						continue
					}
					ok, err := send(&jobs[j])
					if c.obs != nil && !unsent(err) {
						// From the group's start: the wait for one of
						// the keeperFanout goroutines is the Client's
						// queueing, which NodeCall.Duration includes.
						c.observeNode(jobs[j].octx, i, OpExtend, jobs[j].e.l.name, jobs[j].began, ok, err)
					}
					votes <- vote{j, i, ok && err == nil, err}
				}
			})
		}
	}
	go func() {
		wg.Wait()
		qcancel()
		close(votes)
	}()
	n, q := len(c.nodes), c.quorum
	for v := range votes {
		j := &jobs[v.job]
		if !j.done {
			j.r.record(reply{node: v.node, ok: v.ok, err: v.err})
			// A failure with an error retrying cannot fix waits for the
			// votes that may make it a quorum's (see round.refusalsOut),
			// unless the lock is known lost.
			if j.r.yes >= q || j.r.no > n-q && (j.r.lost() || !j.r.refusalsOut()) {
				j.done, j.r.decided = true, true
				decided[v.job].Store(true)
				k.finish(j.e, j.r, j.r.yes >= q, start, j.octx, j.end, j.began)
			}
		}
		// The lock's extension is in flight until its own last node call
		// has returned, not until the group's, which may take longer than
		// the extension interval (see Lock.extending).
		j.fails = j.fails || v.err != nil
		if j.calls++; j.calls == n { // and decided, judged by finish above
			j.e.l.extendReturned(j.e.ttl, j.fails)
		}
	}
	for i := range jobs { // the votes ended undecided: cannot happen with every node answering
		if j := &jobs[i]; !j.done {
			k.finish(j.e, j.r, false, start, j.octx, j.end, j.began)
		}
	}
}

// begin starts the extension of e's lock that began at start, a lock of
// a group that fire took: it registers it with the lock (Lock.beginExtend),
// watches the lock at the end of its validity while it is in flight, and
// reports its start to the observers, if any (octx, end and began are
// theirs: the Extend's context and end, and when it began). It starts
// nothing, and reports false, when Do has removed the lock since fire took
// it (its Unlock may have started: an extension now would be moot, sent
// beside the release, and reported after Unlock's start), or when the lock
// is over already (lost, then). See kept.state: a remove of the lock meanwhile
// waits for the start to be done, here; those of other locks do not.
func (k *keeper) begin(e *kept, start time.Time) (bound time.Time, octx context.Context, end func(ExtendDone), began time.Time, ok bool) {
	c := k.c
	// One extension of a lock at a time (kept.inflight): only a remove
	// sets the state's bits while none starts.
	if !e.state.CompareAndSwap(0, keptStarting) { // removed
		return bound, e.ectx, nil, began, false
	}
	defer func() {
		if e.state.And(^uint32(keptStarting|keptWaiting))&keptWaiting != 0 {
			k.mu.Lock()
			k.started.Broadcast()
			k.mu.Unlock()
		}
	}()
	bound, err := e.l.beginExtend(start, e.ttl, drift(e.ttl, c.driftFactor), nil, false)
	if err != nil { // over already
		k.mu.Lock()
		e.stopped = true
		k.mu.Unlock()
		k.lost(e)
		return bound, e.ectx, nil, began, false
	}
	// Watched at the end of its validity while the extension is in flight.
	k.mu.Lock()
	k.scheduleLocked(e, e.l.Until())
	k.mu.Unlock()
	octx = e.ectx
	if c.obs != nil {
		began = time.Now()
		var o context.Context
		o, end = c.observeExtendStart(e.ectx, ExtendStart{Key: e.l.name, Token: e.l.token, TTL: e.ttl})
		octx = keep(e.ectx, o)
	}
	return bound, octx, end, began, true
}

// callCtx is the context of one lock's node call in an extension group:
// the group's (its deadline and cancellation, and the driver's values,
// looked up first), with the values of the lock's own Extend context (its
// Do's, without observers) after them, so that the node calls of a lock, and
// a driver's tracing hooks, see its Extend and its Do rather than another
// lock's of the group (see Observer). It lives in the group's job: no
// allocation.
type callCtx struct {
	context.Context                 // the group's
	own             context.Context // the lock's Extend's
}

// Value returns the group's value for key, or else the lock's.
func (c *callCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.own.Value(key)
}

// finish judges one lock's extension, which started at start, reports it to
// the observers (end, when not nil), and schedules what comes next for it.
//
// An extension that so many nodes refused with an error retrying cannot fix
// (driver.PermanentCode: NOPERM, READONLY, ...; see round.permanentFailure)
// that no quorum can extend the lock until someone fixes them ends the lock
// at once (EndRefused), as Lock stops at such errors, rather than retry
// until its validity ends: its Do's context is canceled with the
// extension's error as its cause, which matches ErrLockLost and names the
// nodes' errors. An extension that failed with such an error is judged
// only once the votes still out could not make them a quorum's refusal
// (round.refusalsOut), unless the lock is known lost: a node down that
// fails at once does not hide the others' refusals. A transient failure
// is retried while the validity lasts.
func (k *keeper) finish(e *kept, r *round, ok bool, start time.Time, octx context.Context, end func(ExtendDone), began time.Time) {
	err := e.l.finishExtend(octx, r, ok, start, e.ttl)
	refused := false
	if err != nil {
		switch {
		case e.state.Load()&keptRemoved != 0:
			err = errExtendMoot
		case r.permanentFailure() && k.c.quit.Err() == nil:
			// Not the keeper's own ErrClosed (errKeeperClosed) of a
			// Client that Close ends: Close ends its locks itself.
			refused = e.l.endAs(endRefused)
		}
	}
	if k.c.obs != nil {
		how := e.l.reportEndHere(octx)
		lost := how == EndLostExtend || how == EndRefused
		if end != nil {
			observeExtendDone(end, ExtendDone{Key: e.l.name, Token: e.l.token, TTL: e.ttl, Votes: r.counts(), Duration: time.Since(began), Lost: lost, Until: e.l.Until(), Err: err})
		}
	}
	now := k.c.now()
	k.mu.Lock()
	e.inflight = false
	if e.index >= 0 {
		heap.Remove(&k.heap, int(e.index))
	}
	if err == nil {
		next := start.Add(e.every)
		if u := e.l.Until(); u.Before(next) {
			// Held below this extension's bound by an Extend of a
			// shorter TTL whose calls may still land (see
			// Lock.finishExtend): watched at the end of its validity, as
			// while an extension is in flight, so that its Do's context
			// is canceled then.
			next, e.inflight = u, true
		}
		k.scheduleLocked(e, next)
		k.mu.Unlock()
		e.l.dropSettledAcq()
		return
	}
	until := e.l.Until()
	if refused {
		e.stopped = true
		k.mu.Unlock()
		k.lostWith(e, err)
		return
	}
	if r.lost() || !now.Before(until) {
		e.stopped = true
		k.mu.Unlock()
		k.lost(e)
		return
	}
	k.mu.Unlock()
	retry := now.Add(max(e.every/4, time.Millisecond))
	if until.Before(retry) {
		retry = until
	}
	k.mu.Lock()
	k.scheduleLocked(e, retry)
	k.mu.Unlock()
}

// The errors of the calls of an extension group that a node is not sent:
// an earlier call of the group timed out on the node, which has answered
// none of the group's calls since that call was sent (so that a stalled node
// does not hold the group for a node timeout per keeperFanout calls; what
// that still spares, beside errKeeperDecided, is said in extend), or the
// other nodes decided the extension while the call waited for a node timeout
// (the vote is then not counted), whether the node queues or not; and, for a
// node that does not queue, the lock's validity ended while the call waited
// its turn, or Close ended the Client's background work. Since no call was
// made, none is reported to the observers as a NodeCall (see unsent).
var (
	errKeeperStalled = fmt.Errorf("not sent: the node did not answer an earlier extension within the node timeout, nor any since: %w", context.DeadlineExceeded)
	errKeeperMoot    = fmt.Errorf("not sent: the lock's validity ended while the extension waited its turn: %w", context.DeadlineExceeded)
	errKeeperDecided = errors.New("not sent: the other nodes decided the extension while it waited its turn")
	errKeeperClosed  = fmt.Errorf("not sent: %w", ErrClosed)
)

// unsent reports whether err is the Client's own verdict on a call it did
// not send: the keeper's, or Unlock's on a node whose SET had not answered.
// None is reported to the observers as a NodeCall.
func unsent(err error) bool {
	return err == errKeeperStalled || err == errKeeperMoot || err == errKeeperClosed || err == errSetUnanswered
}

// grant makes l the owner of r, its acquisition round: l lets go of r as
// soon as every call of r has returned (at once if they have), rather than
// at its first extension, so that a held lock keeps no round alive.
func (r *round) grant(l *Lock) {
	r.owner.Store(l)
	if r.running.Load() == 0 { // else the last call does it
		l.dropAcq(r, false)
	}
}

// dropAcq lets go of r, the acquisition's round, every call of which has
// returned: its replies are all in, so Unlock would find no late SET to
// follow. It keeps which of its SETs failed (see Lock.unsure), and writes
// nothing of r, which the caller of TryLock may still read (the observers'
// votes).
func (l *Lock) dropAcq(r *round, late bool) {
	l.mu.Lock()
	if l.acq == r {
		l.acq = nil
		l.unsure = r.failedCalls()
		l.acqLate = late
	}
	l.mu.Unlock()
}

// dropSettledAcq lets go of the acquisition's round once every node has
// answered it: Unlock then has no late SET to follow (see followLateSets),
// and a lock held for long keeps no round alive.
func (l *Lock) dropSettledAcq() {
	l.mu.Lock()
	defer l.mu.Unlock()
	acq := l.acq
	if acq == nil {
		return
	}
	if acq.drain(); acq.pendingCount() == 0 {
		l.acq = nil
		l.unsure = acq.failedCalls()
		l.acqLate = true // its SETs answered since the grant (see Lock.keyEnd)
	}
}

// lost ends e's lock, reports the end to the observers at once (not at Do's
// Unlock), and cancels its Do's context with ErrLockLost.
func (k *keeper) lost(e *kept) { k.lostWith(e, ErrLockLost) }

// lostWith is lost with cause, which matches ErrLockLost, as the cause of
// its Do's context.
func (k *keeper) lostWith(e *kept, cause error) {
	e.l.endNow()
	if k.c.obs != nil {
		e.l.reportEndHere(e.ectx)
	}
	e.cancel(cause)
}

// endNow marks the lock as no longer held and closes Done: as expired
// (expireLocked) when its validity has passed.
func (l *Lock) endNow() {
	now := l.c.now()
	l.mu.Lock()
	if !l.overLocked(now) {
		l.endLocked()
	}
	l.mu.Unlock()
}

// stop stops the keeper's timer, for Close, and cancels the contexts of the
// Do's it kept with ErrLockLost (see scheduleLocked); those of a Do added
// later, or of an extension in flight now, are canceled when they would be
// scheduled.
func (k *keeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.timer != nil {
		k.timer.Stop()
	}
	for len(k.heap) > 0 {
		k.scheduleLocked(heap.Pop(&k.heap).(*kept), time.Time{})
	}
}
