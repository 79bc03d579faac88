package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// An Observer sees what a Client does: every acquisition attempt, every wait
// in Lock, every Do, Extend and Unlock, every call to a node, every end of a
// lock's life (and whether it was lost, how that was found, and why: the
// error of the call that found it, LockEnd.Err), and every waiter woken by
// a release. Give one to a Client with WithObserver;
// WithLogger is one that logs. Several may be given: each sees every event.
//
// The methods for a call that spans time (Do, Lock, Attempt, Extend, Unlock)
// are called when it starts, with its context, and return the context the
// call runs on from then on and a function the Client calls, once, when the
// call ends. The context returned must be ctx or derived from it (as
// context.WithValue does): this is how an observer carries a trace span to
// the calls within, since the Client passes it down (Do's to its Lock, to
// the Extends that keep the lock, to its Unlock and to the function it runs;
// Lock's to its attempts; an attempt's, Extend's or Unlock's to the node
// calls within). The end function may be nil when there is nothing to do.
//
// The Client calls the methods from the goroutine of the call they observe,
// except NodeCall, which comes from the goroutine that ran the node call
// (after the call's verdict, for a node that answered late), LockEnd for a
// lock whose validity ran out, which comes from Done's timer or from the
// first call that noticed (Done, Extend, TTL, Unlock), and, within a Do, the
// start of its Lock and its first attempt, which come from the Client's
// goroutine that makes that attempt (see Client.Do), as do their ends when
// the first attempt decided the Lock; a panic there goes on from Do's
// goroutine, as from the others. An end of an attempt, a Lock or a Do's Lock
// that panics (or calls runtime.Goexit) when the lock was granted has its
// lock released, and its end reported (LockEnd), before the panic goes on:
// the lock had not reached its holder, who could not release it. A panic in
// that LockEnd is dropped, so that the first goes on. With several observers,
// every end and every LockEnd runs even if another observer's panicked, so
// that each sees the end of what it saw start; of several panics, the last
// goes on. When a start panics, the observers started before it have their
// ends called, with an Err that says so, before the panic goes on; so does
// a Do whose function panics (see DoDone.Err). When Unlock's start (the Unlock method) panics, the lock is
// released all the same, its end reported, before the panic goes on.
//
// A panic in NodeCall, wherever it runs (amid the bookkeeping of a round of
// calls), and in the methods called on the Client's own goroutines (the
// Extend of Do's extensions and its end, and LockEnd, from Do's extensions or
// from Done's timer) has nobody to go on to: it is recovered, logged with its
// stack through the standard library's log package, and dropped, and the
// Client's work goes on as if the method had returned (a start with no
// context and no end), so that a broken observer neither kills the process
// nor leaves a lock held. runtime.Goexit cannot be stopped that way: an
// observer must not call it on the Client's goroutines, whose work it would
// cut short (Do's extensions among it).
//
// Methods may be called concurrently and must not block: the lock's
// validity runs meanwhile. The Extend of Do's extensions runs on the Client's
// goroutine that extends the locks due together: the extensions of those
// after it wait to start, and its own lock's Do, should its function return,
// waits for it before its Unlock starts (other Do's do not).
//
// No event contains a lock's value or a node's password: nodes are named as
// in NodeError.
//
// To implement only some methods, embed NopObserver: Observer may gain
// methods, and NopObserver will have them.
type Observer interface {
	// Do is called when Client.Do starts.
	Do(ctx context.Context, e DoStart) (context.Context, func(DoDone))
	// Lock is called when Client.Lock starts (Do's included).
	Lock(ctx context.Context, e LockStart) (context.Context, func(LockDone))
	// Attempt is called when an acquisition attempt starts: a TryLock, or
	// one of the attempts of a Lock.
	Attempt(ctx context.Context, e AttemptStart) (context.Context, func(AttemptDone))
	// Extend is called when Lock.Extend starts (Do's included).
	Extend(ctx context.Context, e ExtendStart) (context.Context, func(ExtendDone))
	// Unlock is called when Lock.Unlock starts (Do's included).
	Unlock(ctx context.Context, e UnlockStart) (context.Context, func(UnlockDone))
	// NodeCall is called when a call to one node returns. For a waiter's
	// subscription (OpSubscribe), ctx carries the values (a trace span,
	// say) of the waiter that has the subscriptions when the node answers:
	// after a waiter left them to the next of its Client (see Client.Lock),
	// the next one's, or none until it takes them.
	NodeCall(ctx context.Context, e NodeCall)
	// LockEnd is called once per granted lock, when it is no longer known to
	// be held: unlocked, or lost. An expiry is noticed by Done's timer or by
	// the lock's next call (see EndExpired): a lock of TryLock or Lock that
	// is neither unlocked nor watched (Done) has no LockEnd until such a
	// call, and none at all if it never comes, even after Client.Close.
	LockEnd(ctx context.Context, e LockEnd)
	// Wake is called when a waiter in Lock is woken, before its next
	// attempt: by a release published on the nodes (driver.Notifier), or,
	// when its attempt right after it subscribed or got the turn, or after
	// a wake, found another attempt of its Client on the key in flight, by
	// that attempt's end (refused, that attempt may have missed a release),
	// or by a subscription made again on a node where the first one failed,
	// or confirmed after its last attempt began (a release may have been
	// published there meanwhile, unheard), or by the end
	// of the releases of its own keys that its failed attempts left on
	// some nodes (see Client.Lock).
	Wake(ctx context.Context, e Wake)
}

// NopObserver observes nothing. Embed it in an Observer to implement only
// some of the methods.
type NopObserver struct{}

// Do returns ctx and no end function.
func (NopObserver) Do(ctx context.Context, _ DoStart) (context.Context, func(DoDone)) {
	return ctx, nil
}

// Lock returns ctx and no end function.
func (NopObserver) Lock(ctx context.Context, _ LockStart) (context.Context, func(LockDone)) {
	return ctx, nil
}

// Attempt returns ctx and no end function.
func (NopObserver) Attempt(ctx context.Context, _ AttemptStart) (context.Context, func(AttemptDone)) {
	return ctx, nil
}

// Extend returns ctx and no end function.
func (NopObserver) Extend(ctx context.Context, _ ExtendStart) (context.Context, func(ExtendDone)) {
	return ctx, nil
}

// Unlock returns ctx and no end function.
func (NopObserver) Unlock(ctx context.Context, _ UnlockStart) (context.Context, func(UnlockDone)) {
	return ctx, nil
}

// NodeCall does nothing.
func (NopObserver) NodeCall(context.Context, NodeCall) {}

// LockEnd does nothing.
func (NopObserver) LockEnd(context.Context, LockEnd) {}

// Wake does nothing.
func (NopObserver) Wake(context.Context, Wake) {}

// DoStart describes a Do that starts.
type DoStart struct {
	Key string // the lock's key, without the Client's prefix
}

// DoDone describes a Do that ended: it returned, or did not (a panic or
// runtime.Goexit within; Err says so).
type DoDone struct {
	Key      string        // the lock's key, without the Client's prefix
	Duration time.Duration // from the start of Do to its return
	// Lost reports whether the lock was lost while its function ran, or
	// was no longer held by a quorum at the end: Do then returned
	// ErrLockLost. It is the lock's own loss, not whether Err matches
	// ErrLockLost: the function's error, which Do returns, may match it for
	// another lock (a Do inside another Do's function that returns its
	// context's cause, the outer lock's loss).
	Lost bool
	// Err is what Do returned. A Do that did not return, since its
	// function or an observer panicked or called runtime.Goexit, is
	// reported too, once its lock is released: with an Err that says so,
	// joined with ErrLockLost when the lock was lost.
	Err error
}

// LockStart describes a Lock that starts waiting for a key.
type LockStart struct {
	Key string // the lock's key, without the Client's prefix
}

// LockDone describes a Lock that ended: it returned, or did not (a panic or
// runtime.Goexit within; Err says so).
type LockDone struct {
	Key      string        // the lock's key, without the Client's prefix
	Attempts int           // acquisition attempts made
	Duration time.Duration // the wait: from the start of Lock to its return
	Token    uint64        // the fencing token of the lock obtained; 0 without WithFencing
	Err      error         // nil when the lock was obtained
}

// AttemptStart describes an acquisition attempt that starts.
type AttemptStart struct {
	Key     string // the lock's key, without the Client's prefix
	Attempt int    // 1 for a TryLock and for the first attempt of a Lock
}

// Outcome classifies the end of an acquisition attempt.
type Outcome string

// The outcomes of an acquisition attempt.
const (
	// OutcomeGranted: the lock was obtained.
	OutcomeGranted Outcome = "granted"
	// OutcomeNotObtained: too few nodes granted it (some refused), or too
	// little validity was left.
	OutcomeNotObtained Outcome = "not_obtained"
	// OutcomeUnavailable: so many nodes failed (errors or timeouts, more than
	// nodes minus quorum) that no quorum was possible.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeError: bad input (a bad key, or a bad option given to the
	// call: its Lock and Do are observed too, and fail with it), a closed
	// Client, a context that ended before a verdict, or errors that retrying cannot fix from more than
	// nodes minus quorum nodes (VoteError.Permanent: driver.PermanentCode's,
	// or ErrClosed from closed nodes or clients), which end Lock and Do.
	OutcomeError Outcome = "error"
)

// Votes counts the replies of the nodes to one round of calls.
type Votes struct {
	Nodes   int // nodes of the Client
	Quorum  int // nodes that must agree
	Granted int // nodes that said yes, when the verdict was reached
	Refused int // nodes that said no
	Failed  int // nodes that failed (error or timeout)
	// Own is how many of the Refused nodes (of an acquisition) may have
	// refused it with the caller's own key: a key of an earlier attempt
	// of the same Lock or Do, whose SET there failed (its outcome unknown,
	// often a node timeout too short for the round trip) or was granted,
	// and whose release there was not confirmed yet (it failed, or had not
	// answered). Such a refusal need not mean that another holds the lock.
	Own int
}

// AttemptDone describes an acquisition attempt that ended.
type AttemptDone struct {
	Key     string  // the lock's key, without the Client's prefix
	Attempt int     // as in AttemptStart: 1 for a TryLock and a Lock's first
	Outcome Outcome // how the attempt ended: one of the Outcome constants
	Votes   Votes   // the SET round's; zero when none was sent: bad input, or another attempt of the Client in flight on the key (Err says so)
	// Duration is from the start of the attempt to its end, as its caller
	// waits for it: past the verdict, a failed attempt waits for the
	// first release of its key on the nodes that granted it, so that the
	// key is free there when it returns (one round trip more, up to the
	// node timeout on a node that stalls), as TryLock does; and one that
	// failed with an error retrying cannot fix (NOPERM, say), or with a
	// node's failure (an error, a timeout), among its replies first waits,
	// for up to twice the node timeout, for the replies still out when
	// they could make such errors leave no quorum possible, or failures
	// more than len(nodes)-Quorum (ErrUnavailable) (see TryLock).
	Duration time.Duration
	Token    uint64    // the fencing token when granted with WithFencing
	Until    time.Time // the lock's validity when granted
	Err      error     // nil when granted
}

// ExtendStart describes an Extend that starts.
type ExtendStart struct {
	Key   string        // the lock's key, without the Client's prefix
	Token uint64        // the lock's fencing token; 0 without WithFencing
	TTL   time.Duration // the time to live asked for
}

// ExtendDone describes an Extend that ended: it returned, or did not (a
// panic or runtime.Goexit within; Err says so).
type ExtendDone struct {
	Key      string        // the lock's key, without the Client's prefix
	Token    uint64        // the lock's fencing token; 0 without WithFencing
	TTL      time.Duration // the time to live asked for
	Votes    Votes         // Granted: nodes that extended the lock
	Duration time.Duration // from the start of the Extend (or Do's extension) to its end
	// Lost reports whether this Extend found the lock lost: so many nodes
	// no longer held it that no quorum can, or, for Do's extensions, so
	// many refused it with an error retrying cannot fix (EndRefused); a
	// LockEnd follows.
	Lost bool
	// Until is the lock's validity after the call (Lock.Until): set by an
	// Extend that succeeded; a failed one leaves it where it was, or lowered
	// to the Extend's start + TTL - drift when that was earlier, since its
	// calls may still land (see Lock.Extend). A failed Extend that did not
	// find the lock lost leaves it held until then.
	Until time.Time
	Err   error // nil when extended
}

// UnlockStart describes an Unlock that starts.
type UnlockStart struct {
	Key   string // the lock's key, without the Client's prefix
	Token uint64 // the lock's fencing token; 0 without WithFencing
}

// UnlockDone describes an Unlock that ended: it returned, or did not (a
// panic or runtime.Goexit within; Err says so).
type UnlockDone struct {
	Key      string        // the lock's key, without the Client's prefix
	Token    uint64        // the lock's fencing token; 0 without WithFencing
	Votes    Votes         // Granted: nodes that released the lock
	Duration time.Duration // from the start of the Unlock to its end
	Err      error         // what Unlock returned: nil when a quorum released the lock
}

// NodeCall describes one call to one node. A call the Client decided not to
// send (an extension to a node that has just timed out, a release that waits
// for a SET still unanswered) is not one.
type NodeCall struct {
	Key       string // the lock's key, without the Client's prefix
	Node      string // the node's name, as in NodeError: any password masked
	Operation string // one of the Op constants
	// Duration is the call as the Client sees it: from the moment the round
	// of calls started to the reply, local queueing (in the Client and in
	// the driver) included.
	Duration time.Duration
	OK       bool  // the node said yes
	Err      error // the node's error; nil when it answered
}

// The operations of NodeCall.Operation.
const (
	OpAcquire   = "acquire"   // SET NX PX, with the fencing counter's read under WithFencing
	OpFence     = "fence"     // the fencing token's write (WithFencing)
	OpExtend    = "extend"    // the extension script
	OpRelease   = "release"   // the release script: Unlock, or after a failed attempt
	OpSubscribe = "subscribe" // a waiter's subscription to the key's releases
	OpTTL       = "ttl"       // Lock.TTL's query of the time to live left
	// OpIdentity is the question of which server a node is
	// (driver.Identifier: INFO's run_id with the Redis drivers), asked by
	// the first acquisitions so that one server under two addresses is
	// refused. It is reported only when it fails, with Key "": the check
	// then takes the node as distinct, and a server under two addresses
	// counts twice, unseen (an ACL user without +info, INFO renamed away).
	OpIdentity = "identity"
)

// How a lock's life ended, in LockEnd.How.
const (
	// EndUnlocked: Unlock released it.
	EndUnlocked = "unlocked"
	// EndLostExtend: an Extend found that no quorum held it any more.
	EndLostExtend = "lost_extend"
	// EndExpired: its validity ran out without a successful Extend, noticed
	// by Done's timer or by the first call after it (Extend, TTL, Unlock,
	// even one that then released the key from the nodes).
	EndExpired = "expired"
	// EndLostUnlock: Unlock could not confirm that a quorum still held it,
	// while validity was left: nodes said they no longer held it (deleted,
	// evicted, or forgotten by a node), or failed to answer (down, or
	// closed by Client.Close); Unlock returned ErrLockLost.
	EndLostUnlock = "lost_unlock"
	// EndLostTTL: Lock.TTL found that no quorum held it any more.
	EndLostTTL = "lost_ttl"
	// EndClosed: Client.Close stopped the extensions of a lock held
	// through Do before its function returned (Do returns ErrLockLost).
	EndClosed = "closed"
	// EndRefused: an extension of Do's was refused by so many nodes with
	// an error retrying cannot fix (driver.PermanentCode: NOPERM for an
	// ACL user without +pexpire, READONLY from a replica, ...) that no
	// quorum can extend the lock until someone fixes them: Do gives it up
	// at once, rather than retry until its validity ends, and cancels its
	// function's context (see Do).
	EndRefused = "refused_extend"
)

// LockEnd describes the end of a granted lock's life, reported once per lock.
type LockEnd struct {
	Key   string // the lock's key, without the Client's prefix
	Token uint64 // the lock's fencing token; 0 without WithFencing
	// How is EndUnlocked, or how the loss was found: EndLostExtend,
	// EndExpired, EndLostUnlock, EndLostTTL, EndClosed or EndRefused.
	How string
	// Held is from the grant to this end; for EndExpired, to the end of
	// the lock's validity (its Until), however later the call that
	// noticed it came.
	Held time.Duration
	// Err is why the lock was lost, as the errors of the calls say it:
	//   - EndLostExtend: the error of the Extend that found it lost
	//     (Do's extension's included): ErrLockLost, the votes (a
	//     *VoteError: how many nodes no longer held it, how many failed)
	//     and the *NodeError of each node that failed, joined, with
	//     ctx.Err() when its context had ended.
	//   - EndLostTTL: the error of the Lock.TTL that found it lost, as
	//     Lock.TTL returned it.
	//   - EndLostUnlock: the error Unlock returned.
	//   - EndExpired: the error of the lock's last Extend judged before its
	//     validity ended, when it failed (why the lock was not extended in
	//     time: often the nodes' errors, ErrUnavailable among them when too
	//     many failed); when the last Extend judged by then succeeded but
	//     one was still in flight (waiting in a node's queue, say), an
	//     error saying that the validity ended while it was, which matches
	//     ErrLockLost (its own verdict, which comes later, is not told);
	//     else, when its validity ran out while Unlock ran, the error
	//     Unlock returned; nil when the last Extend judged by then (if any)
	//     succeeded and none was in flight: an expiry noticed by Done's
	//     timer or by a call, with no call failing.
	//   - EndRefused: the error of the extension that so many nodes
	//     refused for good that no quorum could extend it: ErrLockLost,
	//     the votes and each node's *NodeError (NOPERM, READONLY, ...).
	//   - EndClosed: ErrClosed.
	//   - EndUnlocked: nil.
	// Use errors.Is and errors.As on it, as on those calls' errors. A lock
	// of Do's lost while its function ran by an extension's failure or
	// finding (EndLostExtend, EndRefused, and EndExpired with a non-nil
	// Err) has it in Do's error too; for EndClosed, and an EndExpired
	// whose Err is nil, Do's error has ErrLockLost itself, not ErrClosed
	// (see Client.Do). Like every error of the Client, it never
	// contains the lock's value or a node's password.
	Err error
}

// Lost reports whether the lock was lost rather than unlocked.
func (e LockEnd) Lost() bool { return e.How != EndUnlocked }

// Wake describes a waiter in Lock woken by a published release, by the
// end of another attempt of its Client on the key, by a subscription to
// the key's releases made again after it failed, or by the end of the
// releases of the keys its own failed attempts left (see Observer).
type Wake struct {
	Key     string // the lock's key, without the Client's prefix
	Attempt int    // the attempt that follows
}

// WithObserver adds o to the Client's observers; give it several times for
// several observers, each of which sees every event. See Observer. A nil o,
// or one holding a nil pointer, is an error.
func WithObserver(o Observer) Option {
	return func(c *config) {
		c.set |= optObserver
		switch {
		case o == nil:
			c.errs = append(c.errs, errors.New("redlock: WithObserver(nil)"))
			return
		case nilValue(o):
			c.errs = append(c.errs, fmt.Errorf("redlock: WithObserver: a nil %T", o))
			return
		}
		c.observers = append(c.observers, o)
	}
}

// observerOf combines obs into one Observer: nil for none.
func observerOf(obs []Observer) Observer {
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return obs[0]
	}
	return multiObserver(obs)
}

// errStartPanicked is the error of the ends called when another observer's
// start panicked (see fanOut).
var errStartPanicked = errors.New("redlock: another observer panicked or called runtime.Goexit as the call started")

// multiObserver calls each of its Observers in turn, each with the context the
// one before returned; end functions run in the reverse order. Every end,
// and every LockEnd, runs even if another panicked or called
// runtime.Goexit, so that each observer sees the end of what it saw start
// (a grant, then its LockEnd); of several panics, the last goes on.
type multiObserver []Observer

func (m multiObserver) Do(ctx context.Context, e DoStart) (context.Context, func(DoDone)) {
	return fanOut(ctx, m, e, "", DoDone{Key: e.Key, Err: errStartPanicked}, Observer.Do)
}

func (m multiObserver) Lock(ctx context.Context, e LockStart) (context.Context, func(LockDone)) {
	return fanOut(ctx, m, e, "", LockDone{Key: e.Key, Err: errStartPanicked}, Observer.Lock)
}

func (m multiObserver) Attempt(ctx context.Context, e AttemptStart) (context.Context, func(AttemptDone)) {
	return fanOut(ctx, m, e, "", AttemptDone{Key: e.Key, Attempt: e.Attempt, Outcome: OutcomeError, Err: errStartPanicked}, Observer.Attempt)
}

func (m multiObserver) Extend(ctx context.Context, e ExtendStart) (context.Context, func(ExtendDone)) {
	return fanOut(ctx, m, e, "", ExtendDone{Key: e.Key, Token: e.Token, TTL: e.TTL, Err: errStartPanicked}, Observer.Extend)
}

func (m multiObserver) Unlock(ctx context.Context, e UnlockStart) (context.Context, func(UnlockDone)) {
	return fanOut(ctx, m, e, "", UnlockDone{Key: e.Key, Token: e.Token, Err: errStartPanicked}, Observer.Unlock)
}

func (m multiObserver) NodeCall(ctx context.Context, e NodeCall) {
	if len(m) == 0 {
		return
	}
	defer m[1:].NodeCall(ctx, e) // also if this one panics: see recoverObserver
	m[0].NodeCall(ctx, e)
}

func (m multiObserver) LockEnd(ctx context.Context, e LockEnd) {
	if len(m) == 0 {
		return
	}
	defer m[1:].LockEnd(ctx, e) // also if this one panics
	m[0].LockEnd(ctx, e)
}

func (m multiObserver) Wake(ctx context.Context, e Wake) {
	for _, o := range m {
		o.Wake(ctx, e)
	}
}

// fanOut calls start on each observer of m in turn, each with the context
// the one before returned, and returns the last context and an end that
// calls every observer's end (see callEnds). With recoverAs (the method's
// name), on a goroutine of the Client, a start that panics is recovered and
// logged alone (see recoverObserver), so that the other observers' starts
// run and their ends are called. Without, a start that panics (or calls
// runtime.Goexit) goes on to the caller, after the ends of the observers
// started before it are called with aborted, so that each observer sees the
// end of what it saw start.
func fanOut[S, D any](ctx context.Context, m multiObserver, e S, recoverAs string, aborted D, start func(Observer, context.Context, S) (context.Context, func(D))) (context.Context, func(D)) {
	var ends []func(D)
	started := false
	defer func() { // a panic, or runtime.Goexit, which recoverAs cannot stop
		if !started {
			callEnds(ends, aborted)
		}
	}()
	for _, o := range m {
		ctx = startOne(ctx, o, e, recoverAs, start, &ends)
	}
	started = true
	if len(ends) == 0 {
		return ctx, nil
	}
	return ctx, func(d D) { callEnds(ends, d) }
}

// startOne calls start on o and adds its end, if any, to ends; it returns
// the context to go on with (ctx when o gave none, or panicked with
// recoverAs set).
func startOne[S, D any](ctx context.Context, o Observer, e S, recoverAs string, start func(Observer, context.Context, S) (context.Context, func(D)), ends *[]func(D)) (next context.Context) {
	next = ctx
	if recoverAs != "" {
		defer recoverObserver(recoverAs)
	}
	octx, end := start(o, ctx, e)
	next = keep(ctx, octx)
	if end != nil {
		*ends = append(*ends, end)
	}
	return next
}

// callEnds runs ends in reverse order, each also if one run before it
// panicked or called runtime.Goexit.
func callEnds[D any](ends []func(D), d D) {
	if len(ends) == 0 {
		return
	}
	defer callEnds(ends[:len(ends)-1], d)
	ends[len(ends)-1](d)
}
