package redlock

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/ctxend"
	"github.com/go-redlock/redlock/internal/plural"
)

// An op is one command sent to node i.
type op func(ctx context.Context, i int, n driver.Node) (bool, error)

type reply struct {
	node int
	ok   bool
	err  error
}

// Node states within a round.
const (
	pending = iota // no reply yet
	granted        // answered true
	refused        // answered false: definitely not applied
	failed         // answered with an error: outcome unknown
)

// roundObs is what the observers need to know of a round. It is the parent
// of the round's context, set only when the Client has observers, so that a
// round without them is no larger; with them, it costs one allocation.
type roundObs struct {
	context.Context
	op    string    // OpAcquire, ...
	name  string    // the lock's key without the prefix
	began time.Time // when the calls were handed to the workers
}

type roundObsKey struct{}

// Value returns ro for roundObsKey, and otherwise the parent's value.
func (ro *roundObs) Value(key any) any {
	if key == (roundObsKey{}) {
		return ro
	}
	return ro.Context.Value(key)
}

// observed returns the round's roundObs; nil when the Client has no
// observers.
func (r *round) observed() *roundObs { return r.ro }

// keyName is the lock's key without the prefix, for the observers; "" when
// the Client has none.
func (r *round) keyName() string {
	if ro := r.observed(); ro != nil {
		return ro.name
	}
	return ""
}

// A round is one command sent to every node at once, each call bounded by the
// node timeout. The caller collects replies only until the outcome is decided;
// calls still running finish in the background, bounded by the node timeout.
type round struct {
	c *Client
	// replies carries node<<1 | 1 if it said true, buffered for every node,
	// so no sender ever blocks; the node's error is in callErr, written
	// before the send (see take). Without pointers, the channel and its
	// buffer are one allocation. A round of one node, whose call runs on
	// the caller's goroutine (see startRound), has none: its call keeps
	// its reply in lone, which the caller takes (see ready) before any
	// other goroutine may look at the round; so has a round of the
	// keeper, which collects its replies itself.
	replies    chan int32
	callErr    []error // by node; a slice of callErrBuf when the nodes fit
	callErrBuf [8]error
	state      []uint8 // by node; a slice of stateBuf when the nodes fit
	stateBuf   [8]uint8
	yes        int // nodes that answered true
	no         int // nodes that answered false or failed
	refused    int // nodes that answered false
	failed     int // nodes that answered with an error
	// permanent counts the nodes that answered an error retrying cannot fix
	// (driver.PermanentCode); code is the first such error's code, and
	// codes (see votes) are all of them.
	permanent int
	code      string
	caller    context.Context // the caller's: a failure after it ended is not the node's
	errs      []error
	running   atomic.Int32 // calls not yet returned; the last cancels ctx
	lone      int32        // the reply of a round of one node, while hasLone
	hasLone   bool
	decided   bool // wait saw the outcome decided, rather than ctx end
	// hasND and hasQD say which of nd and qd the round's calls use. (As
	// bools beside the others, rather than two contexts: the round then
	// fits the 512-byte size class, with no malloc header.)
	hasND, hasQD bool
	// setTTLms is an acquisition's TTL, which its SETs carry, in
	// milliseconds rounded up (see lateSets); it fills the word of the
	// flags, so that late below keeps the round in its size class.
	setTTLms uint32
	finished func(*round) // nil, or run once every call has returned
	ro       *roundObs    // what the observers need; nil without observers
	// late is set by Unlock when it follows SETs of the acquisition that
	// had not answered: each call that answers after that hands its reply
	// on itself (see lateSets.pump), so that no goroutine waits for them.
	late atomic.Pointer[lateSets]
	// owner is the Lock that an acquisition round granted: it lets go of
	// the round (Lock.acq) once every call has returned (see grant).
	owner atomic.Pointer[Lock]

	op op
	// nd bounds every call by the node timeout, when hasND: not when every
	// node queues. It arms no timer for calls that do not ask for its Done
	// (see lazyDeadline).
	nd lazyDeadline
	// qd is for nodes that queue (driver.Queuer), when the round has a
	// bound (hasQD). It carries the node timeout as the network timeout
	// and ends at the bound, without a timer for the calls that do not
	// wait for it (see lazyDeadline).
	qd lazyDeadline
}

// call runs the round's op on node i and sends its reply.
func (r *round) call(i int) {
	ctx := r.callCtx(i)
	ok, err := r.op(ctx, i, r.c.nodes[i])
	if ro := r.ro; ro != nil && !unsent(err) {
		r.c.observeNode(ctx, i, ro.op, ro.name, ro.began, ok, err)
	}
	v := int32(i) << 1
	if ok && err == nil {
		v |= 1
	}
	r.callErr[i] = err
	if r.replies == nil {
		r.lone, r.hasLone = v, true // one node, on the caller's goroutine
	} else {
		r.replies <- v
		if ls := r.late.Load(); ls != nil {
			ls.pump() // after the send: see followLateSets
		}
	}
	if r.running.Add(-1) == 0 {
		if r.hasND {
			r.nd.end()
		}
		if r.hasQD {
			r.qd.end()
		}
		if r.finished != nil {
			r.finished(r)
		}
		if l := r.owner.Load(); l != nil {
			l.dropAcq(r, true) // answered after the grant (see Lock.keyEnd)
		}
	}
	r.c.inflight.done()
}

// callCtx returns the context of the round's call to node i: nil when every
// node queues, and i is one.
func (r *round) callCtx(i int) context.Context {
	var ctx context.Context
	if r.hasND {
		ctx = &r.nd
	}
	if r.hasQD && r.c.queuers[i] {
		ctx = &r.qd
	}
	return ctx
}

// newRound returns a round over every node that has sent nothing yet,
// without its replies channel (see startRound).
func (c *Client) newRound(ctx context.Context) *round {
	r := &round{c: c, caller: ctx}
	if len(c.nodes) <= len(r.stateBuf) {
		r.state = r.stateBuf[:len(c.nodes)]
		r.callErr = r.callErrBuf[:len(c.nodes)]
	} else {
		r.state = make([]uint8, len(c.nodes))
		r.callErr = make([]error, len(c.nodes))
	}
	return r
}

// start sends o to every node, each call bounded by the node timeout. opName
// and name (the lock's key without the prefix) are for the observers.
func (c *Client) start(ctx context.Context, opName, name string, o op) *round {
	return c.startRound(ctx, opName, name, time.Time{}, o, nil)
}

// startUntil is start for a command that is moot after bound (the lock's
// validity, or a node timeout past the key's end for a release: see
// Lock.keyEndLocked), or that never is if bound is zero. A node that
// queues commands under load (driver.Queuer) then gets the node timeout as
// a network timeout (driver.WithNetworkTimeout), which it starts when it
// sends the command; the command's wait in its queue is bounded by ctx and
// bound (or the node timeout from now, if later), so that a client under
// load queues rather than timing out. The other nodes' calls are bounded by
// the node timeout from now.
func (c *Client) startUntil(ctx context.Context, opName, name string, bound time.Time, o op) *round {
	return c.startRound(ctx, opName, name, bound, o, nil)
}

// startRound is startUntil, with finished (if not nil) run once every call of
// the round has returned, which may be long after the caller's wait decided.
//
// With one node, the call runs on the caller's goroutine: no decision can be
// made before its answer anyway, and a lone call then costs no hand-off to a
// worker.
func (c *Client) startRound(ctx context.Context, opName, name string, bound time.Time, o op, finished func(*round)) *round {
	return c.startRoundLater(ctx, opName, name, bound, o, finished, 0)
}

// startRoundLater is startRound, but hands no call to a worker for the nodes
// in later (a bit each): the caller runs each of them itself (r.call), once,
// when it can (see lateSets). A round of one node has none.
func (c *Client) startRoundLater(ctx context.Context, opName, name string, bound time.Time, o op, finished func(*round), later uint64) *round {
	r := c.newRound(ctx)
	r.finished = finished
	if c.obs != nil {
		r.ro = &roundObs{Context: ctx, op: opName, name: name, began: time.Now()}
		ctx = r.ro
	}
	queued := c.queued && !bound.IsZero()
	if queued {
		// A call never has less than the node timeout in all, as on a
		// node that does not queue: the bound only cuts a long wait in
		// the queue.
		if least := time.Now().Add(c.nodeTimeout); bound.Before(least) {
			bound = least
		}
		r.qd.init(ctx, bound, c.netTimeout)
		r.hasQD = true
	}
	if !queued || c.unqueued {
		// One deadline for all the calls, which start together: one per
		// round rather than one per node, whose timer is armed only if a
		// call asks for its Done.
		r.nd.init(ctx, time.Now().Add(c.nodeTimeout), nil)
		r.hasND = true
	}
	r.op = o
	r.running.Store(int32(len(c.nodes)))
	c.inflight.add(len(c.nodes))
	if len(c.nodes) == 1 {
		r.call(0) // its reply in lone, not on a channel
		return r
	}
	r.replies = make(chan int32, len(c.nodes))
	for i := range c.nodes {
		if later&(1<<i) == 0 {
			c.workers.run(task{r: r, i: i})
		}
	}
	return r
}

// loneCall returns the context of a call to the Client's one node made
// from the caller's goroutine without a round (Client.direct): the one that
// startUntil would give it, under ctx, bounded by bound (zero: none) as
// startUntil says. The call is in flight (Close waits for it) until
// loneDone. A round costs an allocation of 512 bytes, a closure and the
// collection of its reply; this, 80 bytes.
// now, when not zero, is the time now, read by the caller just before from
// the real clock (see Client.realClock): one clock read fewer.
func (c *Client) loneCall(ctx context.Context, bound, now time.Time) *lazyDeadline {
	d := new(lazyDeadline)
	if now.IsZero() {
		now = time.Now()
	}
	if c.queued && !bound.IsZero() {
		if least := now.Add(c.nodeTimeout); bound.Before(least) {
			bound = least
		}
		d.init(ctx, bound, c.netTimeout)
	} else {
		d.init(ctx, now.Add(c.nodeTimeout), nil)
	}
	c.inflight.add(1)
	return d
}

// loneDone ends d, the context of a call of loneCall that has returned.
func (c *Client) loneDone(d *lazyDeadline) {
	d.end()
	c.inflight.done()
}

// loneRound returns the round that startUntil would have returned, under
// ctx, for a call to the Client's one node that a caller made without one
// (see loneCall), and that returned ok, err: every call returned, its reply
// not yet taken (see ready).
func (c *Client) loneRound(ctx context.Context, ok bool, err error) *round {
	r := c.newRound(ctx)
	r.callErr[0] = err
	if ok && err == nil {
		r.lone = 1
	}
	r.hasLone = true
	return r
}

// take returns the reply that v, received from r.replies, stands for.
func (r *round) take(v int32) reply {
	i := int(v >> 1)
	return reply{node: i, ok: v&1 == 1, err: r.callErr[i]}
}

// ready returns a reply that has come and has not been taken, without
// waiting: the lone reply of a round of one node, or one from r.replies.
func (r *round) ready() (reply, bool) {
	if r.hasLone {
		r.hasLone = false
		return r.take(r.lone), true
	}
	select {
	case v := <-r.replies: // never ready if nil
		return r.take(v), true
	default:
		return reply{}, false
	}
}

// next waits for the next reply not yet taken. Call it only while
// pendingCount is above zero.
func (r *round) next() reply {
	if rep, ok := r.ready(); ok {
		return rep
	}
	return r.take(<-r.replies)
}

// wait collects replies until a quorum said true (it returns true), a quorum
// became impossible, or ctx ended (it returns false).
func (r *round) wait(ctx context.Context) bool {
	n, q := len(r.state), r.c.quorum
	for r.yes < q && r.no <= n-q {
		// A reply that came already is taken without the select: a
		// round of one node has its reply before wait begins (see
		// startRound), and the select would cost a lock of both channels
		// and ctx's Done, for nothing. Taking it first is one of the
		// select's own choices when ctx ended too (it picks at random
		// among the ready cases), and ctx's end is judged below either
		// way (decided).
		if rep, ok := r.ready(); ok {
			r.record(rep)
			continue
		}
		select {
		case v := <-r.replies:
			r.record(r.take(v))
		case <-ctx.Done():
			return false
		}
	}
	// Replies that came as ctx ended may be its errors, not the nodes'.
	r.decided = !callerEnded(ctx)
	return r.yes >= q
}

// callFailed reports whether a call of the round returned an error: its
// command may have been applied, or may yet be. Only once every call has
// returned (in finished) does it cover them all.
func (r *round) callFailed() bool {
	for _, err := range r.callErr {
		if err != nil {
			return true
		}
	}
	return false
}

// drain records the replies that have already come, without waiting for the
// others.
func (r *round) drain() {
	for r.pendingCount() > 0 {
		rep, ok := r.ready()
		if !ok {
			return
		}
		r.record(rep)
	}
}

// callerEnded reports whether ctx has ended, or its deadline has passed
// though its timer has not fired yet: a driver whose socket deadline is the
// context's (redigo) can fail a call at that deadline before ctx.Err says
// so, and such a failure is the caller's, not the node's.
func callerEnded(ctx context.Context) bool { return ctxend.Err(ctx) != nil }

func (r *round) record(rep reply) {
	switch {
	case rep.err != nil:
		r.state[rep.node] = failed
		r.no++
		if !callerEnded(r.caller) { // not cut short by the caller
			r.failed++
		}
		if code := permanentCode(rep.err); code != "" {
			r.permanent++
			if r.code == "" {
				r.code = code
			}
		}
		r.errs = append(r.errs, &NodeError{Addr: r.c.names[rep.node], Err: rep.err})
	case rep.ok:
		r.state[rep.node] = granted
		r.yes++
	default:
		r.state[rep.node] = refused
		r.no++
		r.refused++
	}
}

// closedCode is the "code" of a node that answered driver.ErrClosed: the node
// was closed, or the client under it (a node of a driver's New over a client
// its user closed), which no retry opens again.
const closedCode = "ErrClosed (the node, or the client under it, was closed)"

// permanentCode returns what a node's error says that retrying cannot fix,
// or "": driver.PermanentCode's Redis error codes, and closedCode.
func permanentCode(err error) string {
	if errors.Is(err, driver.ErrClosed) {
		return closedCode
	}
	return driver.PermanentCode(err)
}

// pendingCount is how many nodes have not replied.
func (r *round) pendingCount() int { return len(r.state) - r.yes - r.no }

// failedCalls returns the nodes whose call failed, a bit each (MaxNodes is
// 64). Call it only once every call has returned, or every reply was taken.
func (r *round) failedCalls() uint64 {
	var m uint64
	for i, err := range r.callErr {
		if err != nil {
			m |= 1 << i
		}
	}
	return m
}

// lost reports whether so many nodes said false that a quorum cannot hold the
// lock: it is known to be lost, not merely unconfirmed.
func (r *round) lost() bool { return r.refused > len(r.state)-r.c.quorum }

// permanentFailure reports whether so many nodes answered errors that
// retrying cannot fix that no quorum is possible until someone fixes them.
func (r *round) permanentFailure() bool { return r.permanent > len(r.state)-r.c.quorum }

// refusalsOut reports whether the replies still out may yet make the
// round's errors that retrying cannot fix (permanent) a permanentFailure,
// when some came already and do not make one yet: a round decides as soon
// as a quorum is out of reach, and a node down that fails at once, with
// one refusal (NOPERM, say), decides a round of three nodes before the
// third node's refusal, which would say that no quorum is possible until
// someone fixes them. Without such an error so far, it is false: a round
// that failed otherwise waits for nothing more.
func (r *round) refusalsOut() bool { return r.mayTip(r.permanent) }

// failuresOut reports whether the replies still out may yet make the
// round's failures (errors, timeouts: r.failed) more than N − quorum, the
// verdict ErrUnavailable, when some came already and do not make it yet:
// with the key held on the nodes that answer first, their refusals beside
// one node's failure decide a round before the nodes stalled or down have
// all failed, and the verdict would say the key is held elsewhere (busy)
// where no quorum was possible even had every other node agreed. Without a
// failure so far, it is false: refusals alone decided the round, the key
// held elsewhere on more than N − quorum of the nodes that answered.
func (r *round) failuresOut() bool { return r.mayTip(r.failed) }

// mayTip reports whether n nodes of a kind (errors retrying cannot fix,
// failures), some already and not yet more than N − quorum, may become more
// than N − quorum with the replies still out.
func (r *round) mayTip(n int) bool {
	spare := len(r.state) - r.c.quorum
	return n > 0 && n <= spare && n+r.pendingCount() > spare
}

// waitVerdict goes on collecting the replies of the round, which wait
// found decided without a quorum, while they may change what its verdict
// says: that its errors retrying cannot fix leave no quorum possible
// (refusalsOut: Lock and Do then stop at once, rather than retry for ever
// because the round decided before it heard them all), or that too many
// nodes failed for a quorum (failuresOut: ErrUnavailable, not a key held
// elsewhere); until ctx ends (the round is then no verdict: r.decided is
// false), or for at most twice the node timeout. A
// call is bounded by the node timeout from the round's start, before this
// wait began; the second node timeout lets the reply of a call that timed
// out at its bound arrive on a loaded machine (with a bound of one node
// timeout, the timer and the calls' own timeouts ended together, and the
// timer could win). A node that queues (driver.Queuer) may keep a call in
// its queue until the validity's end: a reply later than the timer is not
// waited for, and the attempt is judged without it. The round stays
// failed: no quorum can grant a round already decided without one. The
// timer is made only when a reply must be waited for; a round that failed
// with no error among its replies (the key held on a quorum) waits for
// nothing.
func (r *round) waitVerdict(ctx context.Context) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for r.refusalsOut() || r.failuresOut() {
		if rep, ok := r.ready(); ok {
			r.record(rep)
			continue
		}
		if timer == nil {
			timer = time.NewTimer(2 * r.c.nodeTimeout)
		}
		select {
		case v := <-r.replies:
			r.record(r.take(v))
		case <-ctx.Done():
			// Cut short: not a verdict (see outcome.finished), as in
			// waitPastOwn; Lock and Do keep that of their last attempt
			// that finished, which its partial votes ("2 refused, 1
			// failed") would have replaced, ErrUnavailable lost.
			r.decided = false
			return
		case <-timer.C:
			return
		}
	}
}

// votes returns the round's votes so far.
func (r *round) votes() *VoteError {
	return &VoteError{
		Granted: r.yes, Refused: r.refused, Failed: r.failed, Needed: r.c.quorum, Nodes: len(r.state),
		Permanent: r.permanent, code: r.codes(),
	}
}

// codes names the codes of the errors that retrying cannot fix, each once,
// in the order the nodes answered them: "NOPERM", "WRONGPASS or NOAUTH",
// "NOPERM, WRONGPASS or NOAUTH". The nodes need not answer the same (a
// wrong password on one node, none given on another): the first node's
// code alone would be told as every one's.
func (r *round) codes() string {
	if r.permanent < 2 {
		return r.code
	}
	var codes []string
	for _, err := range r.errs {
		if code := permanentCode(err); code != "" && !slices.Contains(codes, code) {
			codes = append(codes, code)
		}
	}
	return plural.Or(codes)
}

// err joins sentinel, the votes (a *VoteError, which matches ErrUnavailable
// when too many nodes failed), the nodes' errors and ctxend.Err(ctx):
// ctx.Err(), or DeadlineExceeded once its deadline passed, when the round
// counted the nodes' errors at that deadline as the caller's (callerEnded).
func (r *round) err(ctx context.Context, sentinel error) error {
	errs := make([]error, 0, len(r.errs)+3)
	errs = append(errs, sentinel, r.votes())
	errs = append(errs, r.errs...)
	if err := ctxend.Err(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
