package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Lock is a lock held on a quorum of nodes. Its methods are safe for
// concurrent use. A nil *Lock, as TryLock and Lock return with an error, is
// never held: its Unlock and Extend return an error and its Done is closed. A
// zero Lock (not obtained from a Client) acts as a nil one.
type Lock struct {
	c       *Client
	name    string        // the key as the caller gave it
	key     string        // the key on the nodes: the Client's prefix and name
	value   string        // the random value that proves ownership; never shown
	token   uint64        // fencing token; 0 without WithFencing
	granted time.Duration // when it was granted, since clockBase, for the observers

	mu       sync.Mutex
	acq      *round // the acquisition, whose late SETs Unlock must follow; nil once taken
	until    time.Time
	ttl      time.Duration // of the acquisition or the last successful Extend
	ended    bool          // no longer held: Until passed, lost or unlocked
	unlocked bool          // Unlock was called
	wasOver  bool          // the lock was over when Unlock began
	endHow   endKind       // how it ended, until reported to the observers (reportEnd)
	// succeeded counts the Extends that succeeded, so that TTL can tell
	// whether one did while it asked the nodes (see TTL; it wraps, and TTL
	// compares it). Here, it fills the flags' word.
	succeeded uint32
	// cause is LockEnd.Err: the error of the last Extend judged while the
	// lock was held (nil when it succeeded), or that of the call that
	// found the lock lost; errExpiredInFlight when the validity ended with
	// an Extend in flight after a success (see expireLocked); ErrClosed
	// when Close ended it. It stays once
	// the lock has ended, reported or not: Do's error tells it too (see
	// kept.done).
	cause error
	// extending counts the steps still due of the Extends in their group:
	// two per Extend, its judgement (finishExtend) and the return of its
	// last node call (extendReturned), in either order; the group ends when
	// none is due. Beside the flags, it keeps a Lock in a smaller size class.
	extending int32
	done      chan struct{} // made by the first Done call; closed when ended
	timer     *time.Timer   // closes done at until, while done exists

	// groupTTL is the shortest TTL of the Extends in flight and of those
	// that overlapped them (see finishExtend).
	groupTTL time.Duration
	// staleTTL is the shortest TTL of the Extends of which a node call
	// failed (0: none): that PEXPIRE may still land, after a later Extend,
	// and set the key's time to live there again (see extendReturned).
	staleTTL time.Duration
	// lateTTL is the longest TTL of the Extends sent (0: none): a PEXPIRE
	// whose call failed, or has not answered yet, may land on its node as
	// late as the key's end there (keyEnd), and keep the key that much
	// longer (see Unlock).
	lateTTL time.Duration
	// unsure are the nodes, a bit each, whose acquisition SET failed, kept
	// when the acquisition's round is let go (acq): its outcome is unknown,
	// and it may still wait in the node's socket (see Unlock).
	unsure uint64
	// keyEnd is how long a key of this lock may live on a node where its
	// SET or PEXPIRE answered: Redis counts the TTL from the command's
	// arrival, which comes before the reply and may come long after the
	// call's start (a command waits in a queuing node's queue first), and
	// keeps the key through its last millisecond; so the time the calls
	// had returned, plus the TTL, plus 1ms. It is later than the start of
	// every SET or Extend whose calls returned plus its TTL. With the
	// calls still out (see keyEndLocked), it is the one time every release
	// decision of Unlock counts from; it never bounds the validity, which
	// counts from the start (Until).
	keyEnd time.Time
	// setTTL is the acquisition's TTL; acqLate says that a SET of the
	// acquisition answered after the grant, at a time not kept (before
	// Unlock: see Unlock).
	setTTL  time.Duration
	acqLate bool
}

// errNilLock is returned by the methods of a nil or zero *Lock.
var errNilLock = errors.New("redlock: nil or zero *Lock (the lock was not obtained)")

// unmade reports whether l was not made by an acquisition: a nil or zero
// Lock, whose methods act as a nil Lock's.
func (l *Lock) unmade() bool { return l == nil || l.c == nil }

// errNotSent joins ErrLockLost when Extend's context had ended before it
// began.
var errNotSent = errors.New("redlock: Extend sent nothing: its context had ended")

// errOver joins ErrLockLost when Extend finds the lock already over.
var errOver = errors.New("the lock is over: its validity ended, or it was found lost or unlocked")

// badTTL is Extend's error for a TTL out of range: the caller's error,
// which says nothing of the lock (WithLogger does not warn of it).
type badTTL struct{ error }

func (e badTTL) Unwrap() error { return e.error }

// closedChan is the Done channel of a nil Lock.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// Key returns the name of the lock, as given to TryLock or Lock (without the
// Client's key prefix); "" for a nil Lock.
func (l *Lock) Key() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Token returns the lock's fencing token, or 0 when the Client was made
// without WithFencing. Tokens of one key rise with every grant, across clients
// and drivers, as long as the nodes keep their counters (see WithFencing).
// Pass the token to the protected resource with every write, and have it
// reject a token lower than the highest it has seen: that stops a holder who
// paused past its validity, which no lock can.
func (l *Lock) Token() uint64 {
	if l == nil {
		return 0
	}
	return l.token
}

// Until returns the local deadline of the lock's validity: the holder may act
// as the only owner until then, under Redlock's timing assumptions. It is
// measured on the monotonic clock from the start of the acquisition (or of an
// Extend) and already discounts the clock-drift allowance. An Extend lowers
// it at once to its own start + ttl - drift when that is earlier, since the
// nodes may apply the new TTL at any moment, whether the Extend then succeeds
// or not; an Extend that succeeds then sets it as Lock.Extend says. Once
// Until has passed, the lock is over for good. A nil Lock's Until is the zero
// time.
func (l *Lock) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock is no longer known to be
// held: its validity (Until) passed, an Extend or TTL found it lost, Do gave
// it up when so many nodes refused its extension with an error retrying
// cannot fix that no quorum could extend it (EndRefused), or Unlock ran.
// When Until has already passed, the channel returned is already closed. It
// costs nothing until called: the first call arms a timer, and no goroutine
// waits on the lock's behalf. A nil Lock's Done is closed.
func (l *Lock) Done() <-chan struct{} {
	if l.unmade() {
		return closedChan
	}
	if l.c.obs != nil {
		defer l.reportEnd(context.Background()) // after the Unlock below
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		now := l.c.now()
		// Ended as the timer would have ended it (expireLocked, with its
		// cause), before the channel exists: endLocked closes none.
		over := l.overLocked(now)
		l.done = make(chan struct{})
		if over {
			close(l.done)
		} else {
			l.timer = time.AfterFunc(l.until.Sub(now), l.expire)
		}
	}
	return l.done
}

// expire runs when the timer fires at Until.
func (l *Lock) expire() {
	if l.c.obs != nil {
		defer l.reportEndHere(context.Background()) // after the Unlock below
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	if left := l.until.Sub(l.c.now()); left > 0 {
		l.timer.Reset(left) // extended while the timer fired
		return
	}
	l.expireLocked()
}

// expireLocked ends the lock at the end of its validity (see endLocked).
// When no Extend failed since the last one that succeeded (cause nil) and
// one is still in flight (extending: its calls had not all answered), the
// cause says so: the validity ran out while it waited for its answers (in
// a saturated node's queue, say), which is why the lock was not extended
// in time. It reports whether it ended the lock. l.mu is held.
func (l *Lock) expireLocked() bool {
	if !l.endLocked() {
		return false
	}
	if l.cause == nil && l.extending > 0 {
		l.cause = errExpiredInFlight
	}
	return true
}

// errExpiredInFlight is the cause of a lock whose validity ended while an
// extension was in flight, no Extend having failed since the last that
// succeeded (see expireLocked).
var errExpiredInFlight = errors.Join(ErrLockLost, errors.New("its validity ended while an extension was still in flight, unanswered"))

// endLocked marks the lock as no longer held and closes Done. l.mu is held.
func (l *Lock) endLocked() bool {
	if l.ended {
		return false
	}
	l.ended = true
	l.endHow = endExpired // unless the caller says otherwise
	if l.done != nil {
		l.timer.Stop()
		close(l.done)
	}
	return true
}

// overAtUnlock reports whether the lock was over when Unlock began.
func (l *Lock) overAtUnlock() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wasOver
}

// endAs ends the lock, as how, unless it has ended already; it reports
// whether it ended it. A lock whose validity has passed ended then, as
// expired, though nobody noticed (the keeper's timer, late on a loaded or
// paused process): a later Close or refusal does not replace that end, nor
// its cause, the last Extend's error (see Lock.cause), as Unlock does not.
func (l *Lock) endAs(how endKind) bool {
	now := l.c.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.overLocked(now) {
		return false
	}
	if l.endLocked() {
		l.endHow = how
		if how == endClosed {
			l.cause = ErrClosed
		}
		return true
	}
	return false
}

// over reports whether the lock has ended: its validity passed, or it was
// found lost or released.
func (l *Lock) over() bool {
	now := l.c.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.overLocked(now)
}

// overLocked reports whether the lock is over, ending it when Until has
// passed by now. l.mu is held.
func (l *Lock) overLocked(now time.Time) bool {
	if !l.ended && !now.Before(l.until) {
		l.expireLocked()
	}
	return l.ended
}

// setUntilLocked moves Until to u, ending the lock when u is not after now,
// as at the end of its validity (expireLocked). l.mu is held.
func (l *Lock) setUntilLocked(u, now time.Time) {
	l.until = u
	if !now.Before(u) {
		l.expireLocked()
		return
	}
	if l.timer != nil && !l.ended {
		l.timer.Reset(u.Sub(now))
	}
}

// Extend sets the lock's time to live on the nodes to ttl, only where they
// still hold it.
//
// Since a node may apply the new TTL as soon as it is sent, Extend first
// lowers Until to its start + ttl - drift when that is earlier, and a failed
// Extend leaves it there. It succeeds when a quorum extended the lock with
// validity left, and then sets Until to its start + ttl - drift, or to its
// start + t - drift when an Extend of a shorter ttl t was in flight at the
// same time (with it, or with another Extend that was), since their order on
// the nodes is unknown and the shorter one may land last. An earlier Extend
// of which a node call failed may still land on that node, after this one:
// after such an Extend of ttl t, Until is also at most this Extend's start +
// t - drift, for the lock's life. Extends of one ttl, as Do's extensions are,
// never cap one another.
// Otherwise it returns an error matching
// ErrLockLost, with the per-node causes joined in; when so many nodes said
// they no longer hold it that no quorum can, Done is closed too. As
// TryLock's, a failed Extend with an error retrying cannot fix (NOPERM,
// say) among its replies waits, for up to twice the node timeout, for the
// replies still out when they could make such errors leave no quorum
// possible: its *VoteError counts them (Permanent), and its error then says
// that retrying cannot fix them; and one with a node's failure among its
// replies, when theirs could make failures more than len(nodes)-Quorum
// (ErrUnavailable).
//
// Once the lock is over (Until has passed, Done is closed, or Unlock ran),
// Extend sends nothing, closes Done, leaves Until alone and returns an error
// matching ErrLockLost. Unlock still releases the key on the nodes. An
// Extend in flight when Unlock runs fails, whatever the nodes answered, with
// an error matching ErrLockLost and ErrAlreadyUnlocked. After
// the Client's Close, Extend sends nothing, leaves Until alone and returns
// an error matching ErrLockLost and ErrClosed. With a context that has ended
// already, Extend sends nothing, changes nothing (the lock is still held
// until Until), and returns an error matching ErrLockLost with ctx.Err()
// joined in, whatever else ended it. A ttl out of range (not positive, not
// above its drift allowance, above MaxTTL) is bad input: an error that says
// so, not ErrLockLost, with ctx.Err() joined when ctx had ended. Unlike
// WithTTL, Extend takes a ttl at or below the Client's node timeout (to
// shorten what is left, say): the nodes' replies decide, and an Extend whose
// quorum answered after ttl less the drift allowance has passed leaves no
// validity and reports the lock lost.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l.unmade() {
		return badInput(ctx, errNilLock)
	}
	if ctx == nil {
		return errNilContext
	}
	return l.observedExtend(ctx, ttl)
}

// extend is Extend, which also returns its round (nil when it sent nothing)
// for the observers.
func (l *Lock) extend(ctx context.Context, ttl time.Duration) (*round, error) {
	c := l.c
	d := drift(ttl, c.driftFactor)
	var bad error
	switch {
	case ttl <= 0:
		bad = fmt.Errorf("redlock: Extend TTL %v is not positive", ttl)
	case ttl <= d:
		bad = fmt.Errorf("redlock: Extend TTL %v is too small: the drift allowance alone is %v", ttl, d)
	case ttl > MaxTTL:
		bad = fmt.Errorf("redlock: Extend TTL %v is longer than %v", ttl, MaxTTL)
	}
	if bad != nil {
		// The context's end is part of every call's error, bad input's
		// too (as TryLock's).
		return nil, errors.Join(badTTL{bad}, ctx.Err())
	}
	start := c.now()
	bound, err := l.beginExtend(start, ttl, d, ctx.Err(), c.closed.Load())
	if err != nil {
		return nil, err
	}
	// Extensions of held locks go before new acquisitions in a node's
	// queue; one that waits there past its own bound is moot. The Extend
	// is in flight until its last node call has returned, not only until
	// it decided: a call still on its way may apply its TTL after a later
	// Extend succeeded (see extendReturned). It stays in its group until
	// that and its judgement (finishExtend) have both happened, in either
	// order (see Lock.extending).
	r := c.startRound(driver.WithUrgent(ctx), OpExtend, l.name, bound, func(ctx context.Context, _ int, n driver.Node) (bool, error) {
		return n.Extend(ctx, l.key, l.value, ttl)
	}, func(r *round) { l.extendReturned(ttl, r.callFailed()) })
	ok := r.wait(ctx)
	if !ok && r.decided {
		// As an acquisition's: its *VoteError counts the refusals and
		// failures still out, so that it says whether retrying can help
		// and whether too many nodes failed (ErrUnavailable).
		r.waitVerdict(ctx)
	}
	return r, l.finishExtend(ctx, r, ok, start, ttl)
}

// beginExtend registers an Extend of ttl starting at start, d being the
// drift allowance: it returns the Extend's bound (start + ttl - d), lowers
// Until to it, or fails if the lock is already over, if ctxErr (the
// caller's context's error) is not nil, or if closed (the Client's Close
// came before a caller's Extend). Every beginExtend that
// succeeded is followed by one finishExtend and, before or after it, one
// extendReturned once the Extend's last node call has returned; the Extend
// stays in its group until both have run, so that its judgement sees the
// TTLs of every Extend that overlapped it, even when its calls all returned
// before it was judged.
func (l *Lock) beginExtend(start time.Time, ttl, d time.Duration, ctxErr error, closed bool) (time.Time, error) {
	bound := start.Add(ttl - d)
	l.mu.Lock()
	defer l.mu.Unlock()
	// ctxErr, when ctx had ended, is in every error (nil is left out);
	// so is ErrClosed after Close, whatever else ended the lock.
	var closedErr error
	if closed {
		closedErr = ErrClosed
	}
	if l.unlocked { // as TTL: the holder let it go
		return bound, errors.Join(ErrLockLost, ErrAlreadyUnlocked, closedErr, ctxErr)
	}
	if l.overLocked(start) {
		return bound, errors.Join(ErrLockLost, errOver, closedErr, ctxErr)
	}
	if closed {
		// The Client was closed before the caller's Extend: nothing will
		// be sent, and Until stays where it is. (The keeper, whose
		// extensions Close stops itself, passes false.)
		return bound, errors.Join(ErrLockLost, ErrClosed, ctxErr)
	}
	if ctxErr != nil {
		// Nothing will be sent: nothing may land later, so nothing
		// changes.
		return bound, errors.Join(ErrLockLost, errNotSent, ctxErr)
	}
	if l.extending == 0 || ttl < l.groupTTL {
		l.groupTTL = ttl
	}
	l.extending += 2 // its judgement and its calls' return (see Lock.extending)
	if bound.Before(l.until) {
		l.setUntilLocked(bound, start)
	}
	l.lateTTL = max(l.lateTTL, ttl) // while it is in flight, Unlock counts it from its own start, after this one's (keyEndLocked)
	return bound, nil
}

// finishExtend judges an Extend that beginExtend registered, with the votes
// of its round r, which has a quorum if ok.
func (l *Lock) finishExtend(ctx context.Context, r *round, ok bool, start time.Time, ttl time.Duration) error {
	now := l.c.now()
	bound := start.Add(ttl - drift(ttl, l.c.driftFactor))
	l.mu.Lock()
	endedBefore := l.ended
	over := l.overLocked(now)
	if ok && !over {
		// A PEXPIRE of a shorter TTL s may land after this Extend's did,
		// on a node of its quorum: that node then keeps the key for s
		// from a moment after start, no longer. Such a PEXPIRE is one of
		// an Extend of the group (in flight now, or since this one began,
		// before it or after), or one of a failed call of an earlier
		// Extend (staleTTL). An Extend of the same TTL or a longer one
		// only lengthens the key there, wherever it lands: the keeper's
		// extensions, which all have the lock's TTL, never cap one
		// another, however long their calls take.
		for _, s := range [2]time.Duration{l.groupTTL, l.staleTTL} {
			if s > 0 && s < ttl {
				bound = minTime(bound, start.Add(s-drift(s, l.c.driftFactor)))
			}
		}
		u := bound
		l.setUntilLocked(u, now) // ends the lock if u has passed
		if u.After(now) {
			l.ttl = ttl
			l.cause = nil
			l.succeeded++ // TTL's reads may predate its PEXPIREs
			l.extending--
			l.mu.Unlock()
			return nil
		}
		// The cap left no validity: the lock is over, and so is this
		// Extend, which fails as one that took too long.
	}
	if r.lost() && l.endLocked() {
		l.endHow = endLostExtend
	}
	l.extending--
	// Why a quorum's extension did not count, or why a failed one does not
	// leave the lock held: the holder's Unlock ran while it was in flight,
	// or the lock ended otherwise before it was judged (found lost by
	// another call, ended by Close) with validity left; or, for a quorum's,
	// its validity is over.
	unlocked, ended := l.unlocked, over && now.Before(l.until)
	err := r.err(ctx, ErrLockLost)
	switch {
	case unlocked:
		err = errors.Join(err, ErrAlreadyUnlocked)
	case ended:
		err = errors.Join(err, errOver)
	case ok && over && bound.After(now):
		// The quorum answered within this Extend's own TTL, but after
		// the Until it started with: not this Extend's time, the lock's
		// end while it was in flight left no validity.
		err = errors.Join(err, fmt.Errorf("no validity left: the lock's validity ended %v into this Extend, before a quorum extended it (after %v)", l.until.Sub(start), now.Sub(start)))
	case ok:
		err = errors.Join(err, fmt.Errorf("no validity left: extending took %v of the %v TTL", now.Sub(start), ttl))
	}
	if !endedBefore {
		l.cause = err // why it was lost, or why it expires unextended
	}
	l.mu.Unlock()
	return err
}

// extendReturned runs when the last node call of an Extend of ttl has
// returned, before or after finishExtend; failed says that one of them
// returned an error. Such a call's
// PEXPIRE may have been applied, or may still be: a command that the client
// gave up on can still be in the network or in the server's input. If it lands
// after a later, longer Extend, it shortens the key on that node to ttl from
// when it lands, which is after the later Extend started. So no Extend after
// it counts on more than ttl from its own start (see finishExtend). The
// keeper's extensions all have the lock's one TTL, which this never lowers.
func (l *Lock) extendReturned(ttl time.Duration, failed bool) {
	end := l.c.now().Add(ttl + time.Millisecond) // after every call returned: see Lock.keyEnd
	l.mu.Lock()
	l.extending--
	if end.After(l.keyEnd) {
		l.keyEnd = end
	}
	if failed && (l.staleTTL == 0 || ttl < l.staleTTL) {
		l.staleTTL = ttl
	}
	l.mu.Unlock()
}

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Unlock releases the lock on every node and closes Done. It sends the
// release to every node whatever ctx says, an ended ctx included, each bounded
// by the node timeout (on a node that queues commands under load,
// driver.Queuer, as every Redis driver's does, the node timeout bounds a
// release's time on the network, and its wait in the queue, which comes
// first, by the key's end on the nodes, below, and a node timeout after it:
// see WithNodeTimeout).
// It returns once a quorum confirmed the release (the
// other nodes are released in the background; Close waits for them), or
// once the node timeout passed or too many nodes said they did not hold the
// lock for a quorum to confirm it: then with an error matching ErrLockLost,
// with the per-node causes, the votes (*VoteError) and, when ctx ended, ctx's
// error joined in; it matches ErrUnavailable too when so many nodes failed
// that no quorum could answer. A SET of the acquisition that had not answered
// when TryLock returned is followed too: Unlock's call for its node waits for
// the SET's answer (the SET is bounded as every call of the acquisition is)
// and then releases it, so that when the other nodes cannot make a quorum
// without it, Unlock returns once that SET and its release have answered;
// a SET that answers after Unlock's call gave up is released in the
// background (see TryLock). At most 512 releases of a Client run at once: an Unlock
// beyond them first waits, whatever ctx says, for one of them to end (each
// is bounded by the node timeout on a node that does not queue commands; on
// one that does, driver.Queuer, by a wait in its queue up to a node
// timeout past the key's end and then the node timeout; a release that
// follows a SET that had
// not answered waits for that SET within the same bound), and its own node
// timeout starts then.
//
// A nil error says that a quorum released the key, not that the lock was
// still valid: an Unlock after Until finds the key on the nodes until its TTL
// runs out there, releases it and returns nil, and the observers hear
// EndExpired. Check Until, or Done, to know whether the work ended in time.
//
// The key's end is the latest the key may live on a node: a TTL from its
// SET's or PEXPIRE's arrival there, which may come long after the call's
// start (in a node's queue first), and through Redis's last millisecond: a
// TTL, and a millisecond, after the last call that answered returned (a
// TTL after Unlock began for the calls still out). Every release decision
// counts from it, none from the acquisition's start.
//
// A release that fails (its outcome unknown) is repeated in the background
// until the node answers, up to the key's end or Close (after Extends, up
// to their longest TTL past the key's end: a PEXPIRE whose call failed may
// land as late as that, and keep the key a TTL from then); so
// is, once (within the same window), the release of a node that answers
// "not held" but whose acquisition SET failed: that SET may still wait in
// the node's socket, and be applied after the first release. So
// Unlock releases once: a later call returns ErrAlreadyUnlocked at once,
// without a call to the nodes, whatever the first one returned (with
// ctx.Err() joined in when ctx has ended).
func (l *Lock) Unlock(ctx context.Context) error {
	if l.unmade() {
		return badInput(ctx, errNilLock)
	}
	if ctx == nil {
		return errNilContext
	}
	return l.observedUnlock(ctx)
}

// unlock is Unlock, which also returns its round (nil when it sent nothing)
// and whether it ended the lock, for the observers.
func (l *Lock) unlock(ctx context.Context) (*round, bool, error) {
	now := l.c.now()
	l.mu.Lock()
	if l.unlocked {
		l.mu.Unlock()
		// ctx.Err() joined when ctx has ended, as in every call's error.
		return nil, false, ended(ctx, ErrAlreadyUnlocked)
	}
	l.unlocked = true
	// A lock whose validity passed before Unlock, though nobody noticed
	// (Done's timer is armed only once Done is called), ended then: it
	// expired, whatever the release finds on the nodes.
	l.wasOver = l.overLocked(now)
	ended := !l.wasOver && l.endLocked()
	if ended {
		l.endHow = endNone // reported by Unlock, which knows how it ended
	}
	// Every release decision counts from end, the latest the key may live
	// on a node (keyEndLocked): a release call's wait in a queuing node's
	// queue ends a node timeout after it, and a failed release is repeated
	// until the key has expired on its node. An Extend's PEXPIRE whose call
	// failed, or is still in flight, may wait in the node's socket and land
	// there as late as end: it then keeps the key its TTL longer, so the
	// repeats go on that much longer.
	end := l.keyEndLocked(now)
	repeatUntil := end.Add(l.lateTTL)
	acq := l.acq
	l.acq = nil
	unsure := l.unsure
	l.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	late := l.followLateSets(bg, acq, repeatUntil)
	if acq != nil {
		// Drained by followLateSets: the state of a node that answered
		// changes no more.
		for i, st := range acq.state {
			if st == failed {
				unsure |= 1 << i
			}
		}
	}
	// Freed as other releases end, each bounded; not behind acquisitions.
	waited := false // for a release's turn: now is no longer now after it
	select {
	case l.c.releases <- struct{}{}:
	default:
		l.c.releases <- struct{}{}
		waited = true
	}
	defer func() { <-l.c.releases }()
	// The release channel, for the nodes that publish, computed once for
	// all of them.
	var channel string
	if l.c.chanNotify {
		channel = driver.ReleaseChannel(l.key)
	}
	if acq == nil && l.c.direct {
		// One node, no SET to follow: the release straight from here, and
		// a round only for one that fails, as startUntil's would have been.
		c := l.c
		var at time.Time // the time now for loneCall, unless read again after a wait
		if !waited && c.realClock {
			at = now
		}
		d := c.loneCall(bg, end.Add(c.nodeTimeout), at)
		ok, err := c.release(d, 0, l.key, l.value, channel)
		switch { // while the call is in flight, as below
		case err != nil:
			c.settle(bg, 0, l.key, l.value, 2, repeatUntil, nil, nil)
		case !ok && unsure != 0:
			c.settle(bg, 0, l.key, l.value, 1, repeatUntil, nil, nil)
		}
		c.loneDone(d)
		if ok && err == nil {
			return nil, ended, nil
		}
		r := c.loneRound(bg, ok, err)
		r.wait(bg)
		return r, ended, r.err(ctx, ErrLockLost)
	}
	// A release that waits in a node's queue past the key's end is moot.
	release := func(ctx context.Context, i int, _ driver.Node) (bool, error) {
		if late != nil && acq.state[i] == pending {
			// Released once its SET has answered: sent before that,
			// the release could be applied before the SET. This call
			// runs once the SET's reply has come, or once its own
			// bound passed without it (see lateSets).
			rep, answered := late.take(i)
			switch {
			case !answered:
				// Left to followLateSets; its state is unknown, as a
				// failed node's is, not a refusal.
				return false, errSetUnanswered
			case rep.err != nil:
				// Its SET's outcome is unknown and it may still wait in
				// the node's socket: repeated (see settle).
				l.c.settle(bg, i, l.key, l.value, 2, late.deadlineNow(), nil, nil)
				return false, errSetUnanswered
			case !rep.ok:
				return false, nil // refused: the node never held it
			}
		}
		ok, err := l.c.release(ctx, i, l.key, l.value, channel)
		switch {
		case err != nil:
			// Its outcome is unknown, and an earlier Extend may still wait
			// in the node's socket: repeat the release until the node has
			// answered after whatever held it up, so that the key does not
			// outlive the faults that failed this call (see settle).
			l.c.settle(bg, i, l.key, l.value, 2, repeatUntil, nil, nil) // queued: it does not wait
		case !ok && unsure&(1<<i) != 0:
			// Not held, but the node's acquisition SET failed: it may
			// still wait in the node's socket, behind this release on
			// another connection. Released once more, after this one
			// (see settle): that follows whatever the node had queued.
			// Repeated as long as a failed release: an Extend's PEXPIRE
			// that failed may wait behind that SET.
			l.c.settle(bg, i, l.key, l.value, 1, repeatUntil, nil, nil)
		}
		return ok, err
	}
	var r *round
	if late == nil {
		r = l.c.startUntil(bg, OpRelease, l.name, end.Add(l.c.nodeTimeout), release)
	} else {
		r = late.startRelease(bg, l.name, end.Add(l.c.nodeTimeout), release)
	}
	if r.wait(bg) { // the calls end at the node timeout
		return r, ended, nil
	}
	return r, ended, r.err(ctx, ErrLockLost)
}

// keyEndLocked returns, at now, the latest a key of the lock may live on a
// node, as far as the calls that may have landed by now go: a TTL (and
// Redis's last millisecond) from the latest arrival of one of its SETs or
// PEXPIREs there. That is keyEnd for the calls that returned by the last
// time kept, and a TTL after now for those that may have landed since
// without a time kept: the acquisition's calls that outlived the grant (acq
// still held, or acqLate) and, with the longest TTL sent, the Extends in
// flight (a PEXPIRE that lands later still is what Unlock's repeats go on
// for past this end: see lateTTL). It is never earlier than the start of a
// SET or Extend sent plus its TTL, which every release decision counted
// from before. l.mu is held.
func (l *Lock) keyEndLocked(now time.Time) time.Time {
	end := l.keyEnd
	if l.acq != nil || l.acqLate {
		if e := now.Add(l.setTTL + time.Millisecond); e.After(end) {
			end = e
		}
	}
	if l.extending > 0 {
		if e := now.Add(l.lateTTL + time.Millisecond); e.After(end) {
			end = e
		}
	}
	return end
}

// errSetUnanswered is Unlock's verdict on a node whose acquisition SET had
// not answered when the lock was granted, and which its round sends nothing
// (see unsent).
var errSetUnanswered = errors.New("its SET had not answered when the lock was granted: released once it answers")

// followLateSets follows the SETs of the acquisition that had not answered
// when TryLock returned: those still pending in acq, whose state no longer
// changes. Released before its SET answers, such a node could apply the SET
// after the release and keep the key for a whole TTL. So Unlock's call for
// that node runs once its SET has answered, and releases it then, within its
// own bound (see startRelease); a reply that comes after that bound passed
// is followed in the background: released, and again until the node answers
// (see settle), until the later of repeatUntil and a TTL after the reply. It
// returns nil when no SET is pending. repeatUntil is how long Unlock repeats
// a failed release: an Extend's PEXPIRE that failed may wait in the node
// behind the SET, and keep the key its TTL longer (see Unlock).
//
// No goroutine waits for the late replies: from here on, the acquisition's
// call that gets one hands it on itself (pump, from round.call, after its
// send to the round's replies), and runs Unlock's call for its node on its
// own goroutine. (The first form had a goroutine per Unlock read them and
// wake a worker parked in Unlock's call for each: with two of five nodes
// 40ms away, two wakes and a goroutine per lock+unlock, bench/RESULTS.md.)
func (l *Lock) followLateSets(bg context.Context, acq *round, repeatUntil time.Time) *lateSets {
	if acq == nil {
		return nil
	}
	acq.drain()
	if acq.pendingCount() == 0 {
		return nil
	}
	ls := newLateSets(l, bg, acq, repeatUntil)
	// A call that sent its reply before this store finds no lateSets, and
	// its reply is in acq.replies for the pump below; one that loads after
	// it pumps itself. Either way each late reply is pumped.
	acq.late.Store(ls)
	ls.pump()
	return ls
}

// lateSets holds the replies of an acquisition's late SETs for Unlock's calls
// for their nodes, and runs those calls when the replies come (see
// followLateSets). Its methods are safe for concurrent use.
type lateSets struct {
	l        *Lock
	bg       context.Context
	acq      *round
	ttl      time.Duration // the SETs' (the acquisition's)
	deadline time.Time     // until when Unlock repeats a failed release: the key's end, plus the longest Extend TTL
	mu       sync.Mutex
	rel      *round      // Unlock's round, once started
	waiting  int         // nodes in lateWaiting
	timer    *time.Timer // ends the wait of those in lateWaiting at their calls' bounds
	got      []reply
	state    []uint8 // by node: lateNone, or one of the states of a late SET
	gotBuf   [8]reply
	stateBuf [8]uint8
}

// The states of a node in lateSets.
const (
	lateNone      = iota // its SET had answered when Unlock began: not late
	lateOpen             // no reply yet; Unlock's call not started
	lateArrived          // its reply is in got, for Unlock's call
	lateWaiting          // no reply yet; Unlock's call runs when it comes (pump), or at its bound (giveUp)
	lateAbandoned        // Unlock's call gave up: the reply is followed in the background
)

// newLateSets returns the lateSets of acq, an acquisition of l whose SETs
// still pending are followed by an Unlock that repeats a failed release
// until deadline.
func newLateSets(l *Lock, bg context.Context, acq *round, deadline time.Time) *lateSets {
	ls := &lateSets{l: l, bg: bg, acq: acq, ttl: time.Duration(acq.setTTLms) * time.Millisecond, deadline: deadline}
	if len(acq.state) <= len(ls.gotBuf) {
		ls.got, ls.state = ls.gotBuf[:len(acq.state)], ls.stateBuf[:len(acq.state)]
	} else {
		ls.got, ls.state = make([]reply, len(acq.state)), make([]uint8, len(acq.state))
	}
	for i, st := range acq.state {
		if st == pending {
			ls.state[i] = lateOpen
		}
	}
	return ls
}

// startRelease starts Unlock's round (as startUntil, with release as its op)
// and leaves out of it the nodes whose SET has not answered yet: their calls
// run when it answers (pump) or at their bound (giveUp), on the goroutine
// that learns it, instead of on a worker parked until then.
func (ls *lateSets) startRelease(bg context.Context, name string, bound time.Time, release op) *round {
	c := ls.l.c
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var later uint64
	for i, st := range ls.state {
		if st == lateOpen {
			ls.state[i] = lateWaiting
			ls.waiting++
			later |= 1 << i
		}
	}
	// Held across the start: a reply that comes meanwhile waits for rel.
	r := c.startRoundLater(bg, OpRelease, name, bound, release, nil, later)
	ls.rel = r
	if ls.waiting > 0 {
		if next, ok := ls.nextBound(); ok {
			ls.timer = time.AfterFunc(time.Until(next), ls.giveUp)
		}
	}
	return r
}

// bound is the latest moment Unlock's call for node i waits for its SET: the
// end of the call's context, as its wait for it on a worker had. ls.mu is
// held, and rel set.
func (ls *lateSets) bound(i int) time.Time {
	if ctx := ls.rel.callCtx(i); ctx != nil {
		if d, ok := ctx.Deadline(); ok {
			return d
		}
	}
	return ls.rel.nd.deadline
}

// nextBound returns the earliest bound of the nodes in lateWaiting. ls.mu is
// held.
func (ls *lateSets) nextBound() (time.Time, bool) {
	var next time.Time
	found := false
	for i, st := range ls.state {
		if st != lateWaiting {
			continue
		}
		if d := ls.bound(i); !found || d.Before(next) {
			next, found = d, true
		}
	}
	return next, found
}

// pump takes the late replies that have come, and runs Unlock's call for each
// node whose call waited for it: the last on the caller's goroutine (the
// acquisition's call that just got its reply), the others on workers.
// Replies that come after Unlock's call gave up are released in the
// background.
func (ls *lateSets) pump() {
	var run, behind uint64
	ls.mu.Lock()
	for {
		rep, ok := ls.acq.ready()
		if !ok {
			break
		}
		i := rep.node
		switch ls.state[i] {
		case lateOpen:
			ls.got[i], ls.state[i] = rep, lateArrived
		case lateWaiting:
			ls.got[i], ls.state[i] = rep, lateArrived
			ls.waiting--
			run |= 1 << i
		case lateAbandoned:
			ls.got[i] = rep
			behind |= 1 << i
		}
	}
	if ls.waiting == 0 && ls.timer != nil {
		ls.timer.Stop()
	}
	rel := ls.rel
	ls.mu.Unlock()
	for behind != 0 {
		i := bits.TrailingZeros64(behind)
		behind &^= 1 << i
		ls.followAbandoned(ls.got[i]) // written above, and by no one else since: one reply a node
	}
	for run != 0 {
		i := bits.TrailingZeros64(run)
		run &^= 1 << i
		if run == 0 {
			rel.call(i)
		} else {
			ls.l.c.workers.run(task{r: rel, i: i})
		}
	}
}

// giveUp runs, when the first bound passed, Unlock's calls for the nodes
// still waiting for their SETs whose bound has passed: they return
// errSetUnanswered, and their replies are followed in the background.
func (ls *lateSets) giveUp() {
	now := time.Now()
	var give uint64
	ls.mu.Lock()
	for i, st := range ls.state {
		if st == lateWaiting && !now.Before(ls.bound(i)) {
			ls.state[i] = lateAbandoned
			ls.waiting--
			give |= 1 << i
		}
	}
	if ls.waiting > 0 {
		if next, ok := ls.nextBound(); ok {
			ls.timer.Reset(time.Until(next))
		}
	}
	rel := ls.rel
	ls.mu.Unlock()
	for give != 0 {
		i := bits.TrailingZeros64(give)
		give &^= 1 << i
		rel.call(i) // returns at once: take says the SET did not answer
	}
}

// take returns the reply of node i's SET for Unlock's call for that node, run
// once it came (lateArrived); it reports false when the call gave up on it
// (lateAbandoned): the reply then goes to the background (see pump).
func (ls *lateSets) take(i int) (reply, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch ls.state[i] {
	case lateArrived:
		return ls.got[i], true
	case lateWaiting: // not expected: the call runs once the wait is over
		ls.waiting--
	}
	ls.state[i] = lateAbandoned
	return reply{}, false
}

// followAbandoned releases the node of rep, a late SET's reply that came after
// Unlock's call for that node gave up, on the caller's goroutine: the node
// has just answered, so it is released from here, as settle's first release
// would, and left to the node's cleaner only if that fails (or if the SET
// failed: its outcome is unknown).
func (ls *lateSets) followAbandoned(rep reply) {
	l, c := ls.l, ls.l.c
	deadline := ls.deadlineNow()
	switch {
	case rep.err != nil:
		// Queued for the node's cleaner (settle without a first channel
		// does not wait).
		c.settle(ls.bg, rep.node, l.key, l.value, 2, deadline, nil, nil)
	case rep.ok:
		e := pendingRelease{bg: ls.bg, key: l.key, value: l.value, need: 1, deadline: deadline}
		if c.releaseOnce(rep.node, &e) != nil {
			c.settle(ls.bg, rep.node, l.key, l.value, 1, deadline, nil, nil)
		}
	}
}

// deadlineNow is how long the releases of a late SET are repeated: until
// the later of Unlock's deadline for a failed release (the key's end
// plus the longest Extend TTL: an Extend's PEXPIRE that failed on the node
// may wait there behind the SET) and the SET's TTL from now.
func (ls *lateSets) deadlineNow() time.Time {
	if d := ls.l.c.now().Add(ls.ttl + time.Millisecond); d.After(ls.deadline) { // see Lock.keyEnd
		return d
	}
	return ls.deadline
}
