package redlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Do waits for the lock named key as Lock does, runs fn while holding it, and
// unlocks when fn returns. While fn runs, the lock is extended in the
// background to the TTL: each extension starts at most one
// WithExtendInterval (default TTL/3, or less when the node timeout needs it:
// see WithExtendInterval) after the previous one ended, and a quarter of it
// after a failed one.
//
// The extensions are the Client's work, not the call's: one scheduler per
// Client keeps the locks held through Do in a heap, sends the extensions due
// within a few milliseconds of each other to every node together (a
// pipelining node sends them as a few batches, before the acquisitions that
// wait in its queue), and costs neither a goroutine nor a timer per lock.
//
// fn's context is canceled, with ErrLockLost as its cause (context.Cause),
// when the lock is no longer held: at once when its validity (Until) ends
// without a successful extension (before fn starts, if it ended between the
// grant and fn's start), and otherwise when an extension finds it lost. An
// extension that so many nodes refuse with an error retrying cannot fix
// (driver.PermanentCode: NOPERM for an ACL user without +pexpire, READONLY
// from a node a failover turned into a replica, ...) that no quorum can
// extend the lock ends it at once too, as Lock stops at such errors, rather
// than being retried until the validity ends: the cause is then the
// extension's error, which matches ErrLockLost and joins the nodes' errors
// (and Do returns it in place of ErrLockLost: see below), Done is closed, and the
// observers hear EndRefused. Such an extension, decided by a node down
// and one refusal, say, waits for the other nodes' replies when they could
// be refusals too, as Lock's attempts do: each call is bounded by the node
// timeout from when it is sent, but a call to a node that queues may wait
// in its queue (see below), and a node gets at most 64 of the calls of
// the extensions due together at once, so that on a slow node the others
// wait their turn: the verdict may come some node timeouts later (130 locks
// due together, a node timeout of 1s, a node that answers in 0.9s: up to
// 2.7s), at the latest when the validity ends. A
// transient failure (a timeout, a node down)
// is retried while the validity lasts. A
// loss on the nodes (a key evicted or expired early, a node restarted empty)
// is therefore noticed within one extension interval plus the time of the
// extension that finds it, or within that plus one more extension when an
// extension was in flight at the loss; and at the latest when the validity
// ends, whichever comes first. An extension takes at most the node timeout
// on nodes that answer it at once, but on a node that queues commands under
// load (driver.Queuer: the Redis drivers' nodes) it may wait in the queue
// for as long as the lock's validity lasts: the notice may then come only
// at Until, up to the TTL after the last successful extension began. Close
// cancels it too (see Close), since nothing extends the lock
// after it, and releases the lock itself if fn has not returned by then.
// fn must then stop acting on the protected resource.
//
// While the lock is acquired, Do's goroutine only waits: its first attempt
// runs on one of the Client's goroutines (Do waits for a free one among
// the Client's rounds, as TryLock does). So the goroutine that holds the
// lock, which may be one of tens of thousands, keeps the smallest stack
// Go gives a goroutine (bench/RESULTS.md, Scale, gives the memory a held
// lock costs beyond fn's goroutine). When that attempt finds the key busy, Do waits for it
// and makes the next attempts on its own goroutine, as Lock does.
//
// On every exit of fn, a panic and runtime.Goexit included, Do stops
// extending and releases the lock on the nodes, as Lock.Unlock does and
// within its bounds: the node timeout on nodes that answer at once; but a
// release waits first for its turn among the Client's 512 at once, and on a
// node that queues commands under load (driver.Queuer: the Redis drivers'
// nodes) in its queue, up to a node timeout past the key's end there. A
// panic then goes on with its original value.
//
// Do returns fn's error (nil when the lock was held until fn returned and a
// quorum confirmed its release), joined with:
//   - when the lock was lost while fn ran, the loss's cause, as the
//     observers' LockEnd.Err has it, each matching ErrLockLost: the error
//     of the extension that found the lock gone (EndLostExtend: its votes,
//     a *VoteError, and the nodes' errors); that of the extension that the
//     nodes refused for good (EndRefused), which is also the cause of fn's
//     context; when the validity ended (EndExpired), that of the last
//     extension judged before it ended, if that failed (its votes, which
//     match ErrUnavailable when too many nodes failed it, and the nodes'
//     errors, timeouts say: why the lock was not extended in time); when
//     none had failed since the last that succeeded but one was still in
//     flight as the validity ended (waiting in a node's queue, say), an
//     error saying so, which matches ErrLockLost (that extension's own
//     verdict, which comes later, is not told); else ErrLockLost itself (an
//     expiry with no extension failed or in flight, Close stopping the
//     extensions: EndClosed). fn's context has ErrLockLost as its
//     cause for all but EndRefused (the cause of a parent's cancellation
//     that came first stands there, not in Do's error).
//   - when the release was not confirmed by a quorum, Unlock's error:
//     ErrLockLost with the release's votes and the nodes' errors. Alone
//     (the lock was held until fn returned, or lost with ErrLockLost
//     itself as the cause, which it then stands for), its votes are the
//     *VoteError of Do's error, which matches ErrUnavailable when the
//     release failed on too many nodes, timed out say, rather than found
//     the lock gone. After a loss's cause of an extension, it is told
//     after that cause ("the release then:"; errors.Is finds its parts,
//     its *VoteError too, which errors.As does not reach): the cause's
//     votes are the ones errors.As finds and, of the lock's, the only ones
//     that make Do's error match ErrUnavailable (fn's own error may match
//     it too): a release after an expiry finds the keys gone, which says
//     nothing of why they went.
//
// Each is told once: when fn returns ErrLockLost itself, or its context's
// cause, Do's stands for both. When the lock was never obtained, it returns
// Lock's error and fn does not run.
//
// With WithFencing, fn reads its lock's fencing token from its context with
// TokenFrom, to pass to the protected resource with every write (see
// Lock.Token).
//
// opts apply to this call only: WithTTL (from which the default extension
// interval then follows, as New derives it from the Client's TTL: TTL/3, or
// less when the Client's node timeout needs it, unless the Client was given
// WithExtendInterval), WithBackoff, WithMaxAttempts and WithExtendInterval.
// An interval given (to the call or the Client) plus the Client's node timeout
// must be shorter than the TTL less the drift allowance; the default need
// not be (see WithExtendInterval).
func (c *Client) Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error {
	switch {
	case c.unmade():
		return badInput(ctx, errUnmade)
	case fn == nil:
		return badInput(ctx, errNilDo)
	case ctx == nil:
		return errNilContext
	}
	// Do's frames are beneath fn's for as long as fn runs: they are kept
	// few and small (see doCall.lock).
	d := c.newDoCall(key)
	d.ctx, d.opts = ctx, opts
	e, err := d.lock()
	if err != nil {
		return err
	}
	// finish stops the extensions and releases the lock. Deferred, it runs
	// when fn panics or calls runtime.Goexit too, which then go on.
	defer e.finishOnce()
	e.checkStart()
	return e.done(fn(e.fctx))
}

// checkStart cancels fn's context, before fn starts, if the lock's validity
// ended since the grant (an observer that took its time, a pause of the
// process): fn must not start with a live context on a lock that is over,
// as it would until the keeper's timer, due at once, fires on another
// goroutine.
//
//go:noinline
func (e *kept) checkStart() {
	if e.l.over() {
		e.cancel(ErrLockLost)
	}
}

// errNilDo is Do's error for a nil fn.
var errNilDo = errors.New("redlock: Do with a nil function")

// A doCall is the acquisition of Do's lock. Do's goroutine, which may be one
// of tens of thousands that hold a lock each, only waits: the first attempt
// runs on one of the Client's workers (see doCall.lock).
type doCall struct {
	c    *Client
	ctx  context.Context // Do's, or the observers' for Do
	opts []Option
	a    attempts

	state int         // doNew, doQueued, ...; guarded by Client.admitMu
	stop  func() bool // stops the context's AfterFunc while queued (see watch); guarded by Client.admitMu
	self  bool        // not a Do: an attempt that waits for a slot on its own goroutine (see Client.admit)

	// Set by first, read once done is closed:
	lctx  context.Context // the attempts' (the observers' for Lock)
	end   func(LockDone)  // the observers' end of the Lock; nil without
	start time.Time       // of the Lock, for the observers
	wait  bool            // the first attempt failed and Lock would try again: err is its error
	e     *kept           // the lock, once obtained
	err   error
	done  chan struct{}
	obs   *doObs // the observers' Do; nil without observers
	ran   bool   // first returned: no observer panicked nor called runtime.Goexit in it
	tried bool   // first's attempt returned
	// returned: lock is returning, rather than unwinding from an
	// observer's panic or runtime.Goexit (see endUnwound).
	returned bool
	pv       any // what an observer panicked with in first; nil for runtime.Goexit
}

// The states of a doCall's admission.
const (
	doNew      = iota
	doQueued   // waits in Client.admitQ for a slot
	doAdmitted // has a slot: its first attempt runs, or ran, on a worker
	doCut      // its context ended before it had a slot
)

// newDoCall returns Do's acquisition of key, with the Client's settings; Do
// sets its context (an argument less keeps Do's frame smaller).
//
//go:noinline
func (c *Client) newDoCall(key string) *doCall {
	d := new(doCall)
	d.c, d.done = c, make(chan struct{})
	d.a.c, d.a.key, d.a.cc = c, key, c.callDefaults()
	return d
}

// prepare applies Do's options to d and reports the start of the Do to the
// observers. It returns false, with d.err set, on bad options, unless the
// Client has observers: the Do's attempt then fails with that error, which
// they see (see callConfig.bad).
//
//go:noinline
func (d *doCall) prepare() bool {
	if len(d.opts) > 0 {
		d.a.cc, d.err = d.c.callOptions("Do", doOptions, d.opts)
		d.opts = nil
		if d.err != nil {
			d.err = badInput(d.ctx, d.err)
			if d.c.obs == nil {
				return false
			}
			d.a.cc.bad, d.err = d.err, nil
		}
	}
	if d.c.obs != nil {
		d.observeDo()
	}
	return true
}

// lock acquires the lock for Do and hands it to the Client's keeper, which
// extends it until Do is done with it.
//
// While fn runs, the lock is held by Do's goroutine, which may be one of
// tens of thousands. Go's runtime halves the stack of a parked goroutine at
// a collection only while it uses less than a quarter of it, which Do's
// frames beneath fn never do once the stack has grown: so Do's goroutine
// must not grow its stack while it acquires the lock, and Do's frames
// beneath fn must leave room for fn's. The state lives in d and in the kept
// entry, and the release runs when fn has returned.
//
// So Do's goroutine only waits, on one channel, which costs a small stack:
// the first attempt, whose frames are deep (the round, the driver's calls,
// the observers), runs on a worker, with one of the Client's slots for
// rounds, as a TryLock's does; when none is free, it waits in a queue, and
// the attempt that gives a slot back starts it. The workers that run
// attempts are thus at most as many as the slots. When that attempt failed
// and Lock would wait for the key, the wait and the attempts after it run
// on Do's goroutine, as in Lock: a wait never holds a worker, and the
// context ends it at once. So does a context that ends while Do waits for a
// slot.
//
//go:noinline
func (d *doCall) lock() (*kept, error) {
	if d.opts != nil || d.c.obs != nil {
		if !d.prepare() {
			return nil, d.err
		}
	}
	if d.obs != nil {
		return d.lockObserved()
	}
	return d.acquire()
}

// lockObserved is acquire for a Do that its observers saw start: an
// observer's panic (or runtime.Goexit) in the Lock goes on from here, once
// the Do's end is reported. The defer lives in this frame, not in lock's,
// which a Do without observers keeps small (see lock).
//
//go:noinline
func (d *doCall) lockObserved() (*kept, error) {
	defer d.endUnwound()
	return d.acquire()
}

// acquire is lock, once d is prepared.
func (d *doCall) acquire() (*kept, error) {
	if d.c.admitDo(d) {
		<-d.done
		if d.state == doAdmitted && !d.ran {
			if !d.tried && d.end != nil {
				d.lockUnwoundRethrow()
			}
			d.rethrow()
		}
	}
	if d.state != doAdmitted || d.wait {
		d.here()
	}
	d.returned = true
	if d.err != nil {
		d.failed()
		return nil, d.err
	}
	return d.e, nil
}

// lockUnwoundRethrow reports the end of d's Lock, whose first attempt did not
// return, then goes on with its panic (see rethrow), also if that end panics.
//
//go:noinline
func (d *doCall) lockUnwoundRethrow() {
	defer d.rethrow()
	d.lockUnwound()
}

// endUnwound reports the end of d's Do to the observers when its Lock did not
// return, an observer having panicked or called runtime.Goexit in it (see
// rethrow): the lock, if it was granted, is released by then.
func (d *doCall) endUnwound() {
	if !d.returned {
		d.obs.report(errUnwound)
	}
}

// rethrow goes on, on Do's goroutine, with the panic or runtime.Goexit of an
// observer in d's first attempt (see first), so that the caller of Do can
// recover it, as when the attempt ran on its goroutine.
//
//go:noinline
func (d *doCall) rethrow() {
	if d.pv != nil {
		panic(d.pv)
	}
	runtime.Goexit()
}

// failed reports to the observers the end of a Do that did not obtain the
// lock.
//
//go:noinline
func (d *doCall) failed() {
	if d.obs != nil {
		d.obs.report(d.err)
	}
}

// here goes on with d's Lock on Do's goroutine: after a first attempt that
// failed and would be tried again, or when the context ended before a slot
// was free (the attempt then sees it ended). It sets d.e and d.err.
//
//go:noinline
func (d *doCall) here() {
	var (
		l   *Lock
		err error
	)
	if d.state == doAdmitted {
		// The Lock's start was reported by first: its end is due, also
		// when the wait does not return (a Backoff that panics).
		waited := false
		if d.end != nil {
			defer func() {
				if !waited {
					d.lockUnwound()
				}
			}()
		}
		l, err = d.c.lockWait(d.lctx, &d.a)
		waited = true
	} else {
		l, err = d.c.observedLock(d.ctx, d.a.key, d.a.cc)
	}
	d.e, d.err = d.hold(l, err)
}

// lockUnwound reports the end of d's Lock when its wait did not return.
func (d *doCall) lockUnwound() {
	d.end(LockDone{Key: d.a.key, Attempts: d.a.made, Duration: time.Since(d.start), Err: errUnwound})
}

// admitDo starts d's first attempt on a worker if a slot is free, and
// otherwise queues it, to be started when a slot is given back (see leave)
// or let go when d's context ends (state doCut). It returns false when the
// context has ended already.
func (c *Client) admitDo(d *doCall) bool {
	if d.ctx.Err() != nil {
		return false // sends nothing, as admit
	}
	c.admitMu.Lock()
	if len(c.admitQ) == 0 {
		select {
		case c.slots <- struct{}{}:
			d.state = doAdmitted
			c.admitMu.Unlock()
			c.workers.run(task{d: d})
			return true
		default:
		}
	}
	c.admitMu.Unlock()
	return c.queueDo(d)
}

// queueDo queues d until a slot is free or its context ends. A worker
// watches the context (see watch): the AfterFunc that does it has frames
// too deep for Do's goroutine.
func (c *Client) queueDo(d *doCall) bool {
	if d.ctx.Err() != nil {
		return false
	}
	c.admitMu.Lock()
	if len(c.admitQ) == 0 {
		select {
		case c.slots <- struct{}{}: // given back meanwhile
			d.state = doAdmitted
			c.admitMu.Unlock()
			c.workers.run(task{d: d})
			return true
		default:
		}
	}
	d.state = doQueued
	c.admitQ = append(c.admitQ, d)
	c.admitMu.Unlock()
	if d.ctx.Done() != nil {
		c.workers.run(task{d: d, watch: true})
	}
	return true
}

// watch ends d's wait in the queue when its context ends (state doCut),
// unless a slot came first.
func (d *doCall) watch() {
	c := d.c
	stop := context.AfterFunc(d.ctx, func() {
		c.admitMu.Lock()
		cut := d.state == doQueued
		if cut {
			d.state = doCut // leave skips it
		}
		c.admitMu.Unlock()
		if cut {
			close(d.done)
		}
	})
	c.admitMu.Lock()
	queued := d.state == doQueued
	if queued {
		d.stop = stop // called by leave when it admits d
	}
	c.admitMu.Unlock()
	if !queued {
		stop()
	}
}

// first makes the first attempt of d's Lock, on a worker, with the slot that
// d was given, which it gives back, and closes d.done. It reports the Lock to
// the observers unless the attempt failed and Lock would try again.
func (d *doCall) first() {
	c := d.c
	defer d.firstEnded()
	d.lctx = d.ctx
	if c.obs != nil {
		d.start = time.Now()
		var octx context.Context
		octx, d.end = c.obs.Lock(d.ctx, LockStart{Key: d.a.key})
		d.lctx = keep(d.ctx, octx)
	}
	d.a.admitted = true
	l, stop, err := d.a.try(d.lctx)
	d.tried = true // the Lock's end is hold's, or here's, from now on
	if stop {
		d.e, d.err = d.hold(l, err)
	} else {
		d.wait, d.err = true, err
	}
	d.ran = true
}

// firstEnded ends first: it gives d's slot back and closes d.done, also when
// an observer panicked or called runtime.Goexit in the attempt, which Do's
// goroutine then goes on with (see rethrow), rather than the worker, where
// nobody could recover it.
func (d *doCall) firstEnded() {
	d.c.leave()
	if !d.ran {
		d.pv = recover()
	}
	close(d.done)
}

// hold reports the end of d's Lock, which returned l, err, to the observers,
// and hands the lock to the Client's keeper, which extends it until Do is
// done with it.
func (d *doCall) hold(l *Lock, err error) (*kept, error) {
	lockDone(d.end, &d.a, d.start, l, err)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancelCause(d.ctx)
	// Made here, on a worker when the first attempt obtained the lock, the
	// context's channel is not allocated by fn's first call to Done, on
	// Do's goroutine, where the allocator's slow path could grow its stack.
	fctx.Done()
	// The Client's keeper extends the lock; extensions go on while fn
	// winds down after a cancel, and end with Do.
	e := d.c.keeperOf().add(context.WithoutCancel(d.ctx), l, d.a.cc.ttl, d.a.cc.extendEvery, cancel)
	e.fctx, e.obs = fctx, d.obs
	if l.token != 0 || fctx.Value(tokenKey{}) != nil {
		// WithFencing: fn reads it with TokenFrom; without, a zero hides
		// the token of an outer Do, whose fn's context d.ctx is made from.
		e.fctx = context.WithValue(fctx, tokenKey{}, l.token)
	}
	return e, nil
}

// finishOnce finishes Do's hold of e's lock unless done did: when fn
// panicked or called runtime.Goexit. It reports the end of the Do to the
// observers unless done did, also when finish panics (an observer's Unlock
// start, see Lock.observeUnlockStart), so that an observer that saw the Do
// start sees it end.
func (e *kept) finishOnce() {
	if e.obs != nil && !e.reported {
		defer e.reportUnwound()
	}
	if !e.finished {
		e.finish()
	}
}

// reportUnwound reports the end of a Do that did not return: its function,
// or an observer, panicked or called runtime.Goexit.
func (e *kept) reportUnwound() {
	e.reported = true
	err := errUnwound
	if e.lost {
		err = errors.Join(err, ErrLockLost)
	}
	e.obs.report(err)
}

// errUnwound is the Err of the end of a Do or a Lock that did not return:
// a function it called panicked or called runtime.Goexit.
var errUnwound = errors.New("redlock: the call did not return: a function it called (its function, a Backoff, an observer) panicked or called runtime.Goexit")

// done finishes Do's hold of e's lock after fn returned ferr, and returns
// Do's error: ferr, joined with the loss's cause (an extension's error, or
// ErrLockLost) when the lock was lost while fn ran, and with Unlock's error
// when the lock was not released by a quorum, which stands for a bare
// ErrLockLost and follows an extension's (see Do). It reports the end of
// the Do to the observers.
//
//go:noinline
func (e *kept) done(ferr error) error {
	lost, uerr := e.finish()
	// The loss's cause, as the lock keeps it for LockEnd.Err (Lock.cause):
	// the error of the extension that found the lock gone, or that the
	// nodes refused for good (which the keeper gave fn's context too), or,
	// when its validity ended, of its last extension if that failed (why
	// it was not extended in time), or that one was still in flight (see
	// Lock.expireLocked); else ErrLockLost itself (an expiry with no
	// extension failed or in flight, Close). Not read from fn's context, whose
	// cause may be its parent's (a Do inside another's fn, canceled by the
	// outer loss first).
	cause := ErrLockLost
	if lost {
		if c := e.l.lossCause(); errors.Is(c, ErrLockLost) { // not Close's ErrClosed
			cause = c
		}
	}
	err, joined := ferr, ferr
	if ferr == ErrLockLost || ferr == cause {
		// fn returned its context's cause: the loss joined below says
		// it, once.
		joined = nil
	}
	switch {
	case errors.Is(uerr, ErrLockLost) && lost && cause != ErrLockLost:
		// Why the lock was lost (an extension's failure, or its finding),
		// which the release's error does not say, and that error: the
		// release's votes are of the keys as the release found them,
		// gone once the lock has expired, whatever took it.
		err = errors.Join(joined, lostUnreleased{cause, uerr})
	case errors.Is(uerr, ErrLockLost):
		// The release's own account: its votes (which match
		// ErrUnavailable when nodes failed rather than found the lock
		// gone) and the nodes' errors. Its ErrLockLost stands for the
		// loss, if any: a loss's cause is then ErrLockLost itself.
		err = errors.Join(joined, uerr)
	case lost:
		err = joinTo(joined, cause)
	}
	if e.obs != nil {
		e.reported = true
		// The lock's own loss, or a release that no quorum confirmed:
		// fn's error, in err too, may match ErrLockLost for another lock.
		e.obs.reportLost(err, lost || errors.Is(uerr, ErrLockLost))
	}
	return err
}

// joinTo returns ferr joined with err, or err itself when ferr is nil: a
// bare ErrLockLost is then the sentinel, not a join of it. (A release's
// error stays joined alone, as it was: the command tells its parts by the
// join's, see cmd/redlock's withoutJoined.)
func joinTo(ferr, err error) error {
	if ferr == nil {
		return err
	}
	return errors.Join(ferr, err)
}

// finish stops the extensions of e's lock and releases it. It reports
// whether the lock was lost while fn ran, and Unlock's error. The lock was
// lost if the keeper found it lost or Close stopped its extensions, or if its
// validity ended before fn returned. Those are not read from the cause of
// fn's context: a caller's cancel before them is its cause, and a caller's
// cause may be ErrLockLost itself, of another lock (a Do inside another's
// fn, whose context the outer loss cancels). The keeper ends the lock
// (over) before it cancels fn's context, and Close marks it given.
func (e *kept) finish() (lost bool, uerr error) {
	e.finished = true
	k := e.l.c.keeperOf()
	given, by := k.remove(e) // an extension in flight is moot: the release follows
	// A lock that Close gave up ended then (keeper.give), lost, whatever
	// the release finds (the nodes may still be open).
	lost = given || e.l.over()
	e.lost = lost
	e.cancel(nil)
	switch by {
	case releaseDo:
		uerr = e.unlock(k)
	case releaseClose:
		<-e.byClose // bounded by the release's node calls
		uerr = e.closeErr
	default:
		uerr = errNotReleased
		if e.l.c.obs != nil {
			// No Unlock reports its end (EndClosed, from give, or
			// an expiry before it): reported here, as an Unlock's
			// would have been, before the Do's own end.
			e.l.reportEnd(e.ectx)
		}
	}
	if !lost && e.l.overAtUnlock() { // its validity passed between the two
		lost = true
		e.lost = true
	}
	return lost, uerr
}

// unlock releases e's lock for Do, and tells k once it is done, also when
// an observer panics in the Unlock: Close waits for it (see keeper.remove).
func (e *kept) unlock(k *keeper) error {
	defer k.released()
	return e.l.Unlock(e.ectx)
}

// errNotReleased is the release's error of a Do whose function returned
// once Close had begun to close the nodes, without the lock in its hands:
// it was granted after Close released the locks of Do.
var errNotReleased = fmt.Errorf("%w: not released: the Client was closing its nodes (%w); the key expires at its TTL", ErrLockLost, ErrClosed)

// lostUnreleased is Do's account of a lock lost while fn ran, for a cause
// that an extension told (cause, its error: the nodes refused it for good,
// found the lock gone, or failed until the validity ended), whose release
// then failed too (release, Unlock's error). Both match ErrLockLost, and
// errors.Is finds every part of both, the cause's first, and errors.As every
// part but the release's *VoteError (see Unwrap): the cause's *VoteError is
// the one errors.As finds, and it alone says whether the
// whole matches ErrUnavailable (see Unwrap). Its text tells each part once:
// the release's parts that the cause's error already has (the bare
// ErrLockLost, a context's error) are left out of it, and so is the
// "redlock: lock lost: " that begins a part of the release's own.
type lostUnreleased struct{ cause, release error }

func (e lostUnreleased) Error() string {
	told := joinedLeaves(nil, e.cause)
	var b strings.Builder
	b.WriteString(e.cause.Error())
	b.WriteString("\nthe release then:")
	for _, part := range joinedLeaves(nil, e.release) {
		if toldIn(told, part) {
			continue
		}
		text := part.Error()
		if errors.Is(part, ErrLockLost) {
			text = strings.TrimPrefix(text, ErrLockLost.Error()+": ")
		}
		b.WriteByte('\n')
		b.WriteString(text)
	}
	return b.String()
}

// Unwrap returns the cause, then the parts of the release's error, whose
// votes are told (errors.Is finds the *VoteError itself) but do not match
// ErrUnavailable: the errors of a call that found no quorum match it when
// the votes that errors.As finds in them, here the cause's, say that too
// many nodes failed (see VoteError). A release that failed after a lock was
// found gone does not make the loss an outage.
func (e lostUnreleased) Unwrap() []error {
	parts := joinedLeaves([]error{e.cause}, e.release)
	for i, part := range parts[1:] {
		if v, ok := part.(*VoteError); ok {
			parts[1+i] = releaseVotes{v}
		}
	}
	return parts
}

// releaseVotes are the votes of a release that Do's error tells after the
// loss's cause (see lostUnreleased.Unwrap).
type releaseVotes struct{ v *VoteError }

func (r releaseVotes) Error() string { return r.v.Error() }

// Is reports whether target is the votes themselves.
func (r releaseVotes) Is(target error) bool {
	v, ok := target.(*VoteError)
	return ok && v == r.v
}

// toldIn reports whether part is one of told (==). Two errors of one type
// that == cannot compare panic when compared, and so do two of a type that
// reflect calls comparable (a struct with an interface field) whose values
// hold such a type (a slice in the field): part is then not found, and told.
func toldIn(told []error, part error) (found bool) {
	defer func() {
		if recover() != nil {
			found = false
		}
	}()
	return slices.Contains(told, part)
}

// joinedLeaves appends to dst the errors that err joins (errors.Join, or
// any error whose Unwrap returns a list), through joins of joins, or err
// itself when it joins none; nil ones are left out. Their texts, one a
// line, are err's text when err is a join.
func joinedLeaves(dst []error, err error) []error {
	if err == nil {
		return dst
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return append(dst, err)
	}
	for _, e := range j.Unwrap() {
		dst = joinedLeaves(dst, e)
	}
	return dst
}
