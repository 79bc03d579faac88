package redlock

import (
	"context"
	"errors"
	"log"
	"runtime/debug"
	"time"
)

// The calls of the Client and Lock, with their observers. Without observers
// (c.obs == nil) each is one nil check in front of the call: no clock read, no
// allocation.

// keep returns the observer's context, or ctx when the observer gave none.
func keep(ctx, observed context.Context) context.Context {
	if observed == nil {
		return ctx
	}
	return observed
}

// A doObs is a Do reported to the Client's observers.
type doObs struct {
	key   string
	start time.Time
	end   func(DoDone) // nil when the observers want no end
}

// observeDo reports the start of d's Do to the Client's observers, which it
// has, and makes d's context theirs.
//
//go:noinline
func (d *doCall) observeDo() {
	o := &doObs{key: d.a.key, start: time.Now()}
	octx, end := d.c.obs.Do(d.ctx, DoStart{Key: o.key})
	d.ctx, o.end = keep(d.ctx, octx), end
	if end != nil {
		d.obs = o
	}
}

// report reports the end of the Do, which returned err: an error of the
// library's, whose ErrLockLost says the lock's loss.
func (o *doObs) report(err error) { o.reportLost(err, errors.Is(err, ErrLockLost)) }

// reportLost reports the end of the Do, which returned err, and whether its
// lock was lost (see DoDone.Lost): err has fn's error in it, which may match
// ErrLockLost without that (another lock's loss, such as the cause of an
// outer Do's context).
func (o *doObs) reportLost(err error, lost bool) {
	o.end(DoDone{Key: o.key, Duration: time.Since(o.start), Lost: lost, Err: err})
}

func (c *Client) observedLock(ctx context.Context, key string, cc callConfig) (*Lock, error) {
	a := attempts{c: c, key: key, cc: cc}
	if c.obs == nil {
		return c.lock(ctx, &a)
	}
	start := time.Now()
	octx, end := c.obs.Lock(ctx, LockStart{Key: key})
	if end != nil {
		// A Backoff or an observer that panics within: the end is due.
		// (Its attempts and duration are known only then.)
		defer func() {
			if e := takeFunc(&end); e != nil {
				e(LockDone{Key: key, Attempts: a.made, Duration: time.Since(start), Err: errUnwound})
			}
		}()
	}
	l, err := c.lock(keep(ctx, octx), &a)
	lockDone(takeFunc(&end), &a, start, l, err)
	return l, err
}

// takeFunc returns *f and sets it to nil: an end taken is called once.
func takeFunc[D any](f *func(D)) func(D) {
	e := *f
	*f = nil
	return e
}

// endUnwound calls *end with d, unless it was taken: deferred, it reports the
// end of a call that did not return (a panic within).
func endUnwound[D any](end *func(D), d D) {
	if e := takeFunc(end); e != nil {
		e(d)
	}
}

// lockDone reports the end of a Lock that started at start, made a's
// attempts and returned l, err to the observer's end (if not nil).
func lockDone(end func(LockDone), a *attempts, start time.Time, l *Lock, err error) {
	if end == nil {
		return
	}
	d := LockDone{Key: a.key, Attempts: a.made, Duration: time.Since(start), Err: err}
	if l != nil {
		d.Token = l.token
	}
	reportGranted(l, end, d)
}

// reportGranted calls end(d), an observer's end of a call that returned l,
// before l reaches its holder (the caller, or Do's keeper). If l is not nil
// and end panics or calls runtime.Goexit, nobody else could ever release l: it
// is released here, each node's call bounded by the node timeout, its end
// reported (LockEnd: its grant may have been, to other observers or by the
// attempt's end), and the panic goes on.
func reportGranted[D any](l *Lock, end func(D), d D) {
	if l == nil {
		end(d)
		return
	}
	returned := false
	defer func() {
		if !returned {
			l.releaseAbandoned()
		}
	}()
	end(d)
	returned = true
}

// releaseAbandoned releases l, which an observer's panic kept from its
// holder or from its Unlock, and reports its end to the observers. A panic of theirs in that
// report is dropped: the first one, under way, goes on.
func (l *Lock) releaseAbandoned() {
	defer func() { _ = recover() }() // only a panic raised in here: this defer is not run by the first
	l.unlockReported(context.Background())
}

// attempt makes the acquisition attempt number n (1 for a TryLock); admitted
// says that the caller took a slot for it (see tryLock).
func (c *Client) attempt(ctx context.Context, key string, cc callConfig, n int, admitted bool) (*Lock, outcome, error) {
	if c.obs == nil {
		return c.tryLock(ctx, key, cc, admitted)
	}
	start := time.Now()
	octx, end := c.obs.Attempt(ctx, AttemptStart{Key: key, Attempt: n})
	ctx = keep(ctx, octx)
	l, o, err := c.tryLock(ctx, key, cc, admitted)
	if end != nil {
		d := AttemptDone{Key: key, Attempt: n, Outcome: classify(o, l, err), Duration: time.Since(start), Err: err}
		if o.r != nil {
			d.Votes = o.r.counts()
			d.Votes.Own = o.r.ownRefusals(o.had)
		}
		if l != nil {
			d.Token, d.Until = l.token, l.until
		}
		reportGranted(l, end, d)
	}
	return l, o, err
}

// classify says how an attempt that returned l, o, err ended.
func classify(o outcome, l *Lock, err error) Outcome {
	switch {
	case l != nil:
		return OutcomeGranted
	case !errors.Is(err, ErrNotObtained), o.permanent:
		return OutcomeError // bad input, a closed Client, a permanent error
	case errors.Is(err, ErrUnavailable):
		return OutcomeUnavailable
	case o.cut, o.r != nil && !o.finished:
		return OutcomeError // no verdict: the context ended first (in the round, or before it could start)
	}
	return OutcomeNotObtained
}

// counts counts the round's replies so far.
func (r *round) counts() Votes {
	return Votes{Nodes: len(r.state), Quorum: r.c.quorum, Granted: r.yes, Refused: r.refused, Failed: r.failed}
}

func (l *Lock) observedExtend(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if c.obs == nil {
		_, err := l.extend(ctx, ttl)
		return err
	}
	start := time.Now()
	octx, end := c.obs.Extend(ctx, ExtendStart{Key: l.name, Token: l.token, TTL: ttl})
	ctx = keep(ctx, octx)
	r, err := l.extend(ctx, ttl)
	if end != nil {
		// A LockEnd that panics: the Extend's end is due all the same.
		defer endUnwound(&end, ExtendDone{Key: l.name, Token: l.token, TTL: ttl, Err: errUnwound})
	}
	lost := l.reportEnd(ctx) == EndLostExtend
	if end := takeFunc(&end); end != nil {
		d := ExtendDone{Key: l.name, Token: l.token, TTL: ttl, Duration: time.Since(start), Lost: lost, Until: l.Until(), Err: err}
		if r != nil {
			d.Votes = r.counts()
		}
		end(d)
	}
	return err
}

func (l *Lock) observedUnlock(ctx context.Context) error {
	c := l.c
	if c.obs == nil {
		_, _, err := l.unlock(ctx)
		return err
	}
	start := time.Now()
	octx, end := l.observeUnlockStart(ctx)
	ctx = keep(ctx, octx)
	if end != nil {
		// A LockEnd (or anything within) that panics: the Unlock's end is
		// due all the same.
		defer endUnwound(&end, UnlockDone{Key: l.name, Token: l.token, Err: errUnwound})
	}
	r, err := l.unlockReported(ctx)
	if end := takeFunc(&end); end != nil {
		d := UnlockDone{Key: l.name, Token: l.token, Duration: time.Since(start), Err: err}
		if r != nil {
			d.Votes = r.counts()
		}
		end(d)
	}
	return err
}

// observeUnlockStart reports the start of l's Unlock to the observers. If
// one panics (or calls runtime.Goexit), l is released all the same, its end
// reported, before the panic goes on: the lock must not outlive a broken
// observer for its TTL (within Do, nobody else would release it).
func (l *Lock) observeUnlockStart(ctx context.Context) (context.Context, func(UnlockDone)) {
	returned := false
	defer func() {
		if !returned {
			l.releaseAbandoned()
		}
	}()
	octx, end := l.c.obs.Unlock(ctx, UnlockStart{Key: l.name, Token: l.token})
	returned = true
	return octx, end
}

// unlockReported is unlock, on a Client with observers, which then reports
// the lock's end to them (LockEnd): how Unlock ended it, or how it had ended
// before, if not reported yet.
func (l *Lock) unlockReported(ctx context.Context) (*round, error) {
	r, ended, err := l.unlock(ctx)
	if ended && r != nil {
		how, cause := EndUnlocked, error(nil)
		if err != nil { // no quorum confirmed the release: ErrLockLost
			how, cause = EndLostUnlock, err
			if !l.c.now().Before(l.Until()) {
				how = EndExpired
				if c := l.lossCause(); c != nil {
					cause = c // the last Extend's, which failed
				}
			}
		}
		l.c.obs.LockEnd(ctx, l.endEvent(how, cause))
	} else {
		l.reportEnd(ctx) // an end before Unlock, not reported yet
	}
	return r, err
}

// reportEnd reports the end of l's life to the observers, unless it has not
// ended, was reported already, or was ended by Unlock (which reports it); it
// returns how l ended, "" when it reported nothing. l.mu must not be held.
func (l *Lock) reportEnd(ctx context.Context) string {
	how, cause := l.takeEnd()
	if how != "" {
		l.c.obs.LockEnd(ctx, l.endEvent(how, cause))
	}
	return how
}

// takeEnd returns how l ended, if that is not reported yet, and its cause
// (LockEnd.Err), and marks it reported; "" when there is nothing to
// report. The cause stays (Do's error tells it too: see kept.done). l.mu
// must not be held.
func (l *Lock) takeEnd() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	how := endNames[l.endHow]
	if how == "" {
		return "", nil
	}
	l.endHow = endNone
	return how, l.cause
}

// lossCause returns the cause kept for LockEnd.Err (see Lock.cause): once
// the lock has ended, why it was lost, as far as an Extend, a TTL or Close
// told it; nil when none did. l.mu must not be held.
func (l *Lock) lossCause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// endKind is how a lock ended, kept in a byte of the Lock until reported.
type endKind uint8

const (
	endNone endKind = iota // not ended, reported already, or ended by Unlock
	endExpired
	endLostExtend
	endLostTTL
	endClosed
	endRefused
)

var endNames = [...]string{endNone: "", endExpired: EndExpired, endLostExtend: EndLostExtend, endLostTTL: EndLostTTL, endClosed: EndClosed, endRefused: EndRefused}

// clockBase is the origin of Lock.granted.
var clockBase = time.Now()

// endEvent describes the end of l's life. An expired lock's ended with its
// validity, which the call that noticed (Unlock, Extend, TTL) may follow by
// long.
func (l *Lock) endEvent(how string, cause error) LockEnd {
	end := l.c.now()
	if u := l.Until(); how == EndExpired && u.Before(end) {
		end = u
	}
	return LockEnd{Key: l.name, Token: l.token, How: how, Held: end.Sub(clockBase) - l.granted, Err: cause}
}

// recoverObserver recovers the panic of an observer's method, called on a
// goroutine of the Client where nobody could recover it (see Observer): the
// panic is logged, with its stack, and dropped, and the Client's work goes on
// as if the method had returned (with nothing, for a start). It must be
// deferred directly.
func recoverObserver(method string) {
	if v := recover(); v != nil {
		log.Printf("redlock: panic in Observer.%s on a goroutine of the Client, recovered (the Client's work goes on): %v\n%s", method, v, debug.Stack())
	}
}

// observeExtendStart reports the start of an extension of the keeper's to
// the observers, on the keeper's goroutine (see recoverObserver).
func (c *Client) observeExtendStart(ctx context.Context, e ExtendStart) (octx context.Context, end func(ExtendDone)) {
	if m, ok := c.obs.(multiObserver); ok {
		return fanOut(ctx, m, e, "Extend", ExtendDone{Key: e.Key, Token: e.Token, TTL: e.TTL, Err: errStartPanicked}, Observer.Extend)
	}
	defer recoverObserver("Extend")
	return c.obs.Extend(ctx, e)
}

// observeExtendDone calls end, the end of an extension of the keeper's, on
// the keeper's goroutine (see recoverObserver).
func observeExtendDone(end func(ExtendDone), d ExtendDone) {
	defer recoverObserver("Extend's end")
	end(d)
}

// reportEndHere is reportEnd on a goroutine of the Client: the keeper's or
// Done's timer (see recoverObserver).
func (l *Lock) reportEndHere(ctx context.Context) (how string) {
	defer recoverObserver("LockEnd")
	how, cause := l.takeEnd()
	if how != "" {
		l.c.obs.LockEnd(ctx, l.endEvent(how, cause))
	}
	return how
}

// observeNode reports a node call that started at began. It runs on the
// goroutine of the call, amid the bookkeeping of its round: a panic of an
// observer's there is recovered wherever it runs (see recoverObserver).
func (c *Client) observeNode(ctx context.Context, i int, op, name string, began time.Time, ok bool, err error) {
	defer recoverObserver("NodeCall")
	c.obs.NodeCall(ctx, NodeCall{Key: name, Node: c.names[i], Operation: op, Duration: time.Since(began), OK: ok && err == nil, Err: err})
}

// observedRelease releases key (prefix included) on node i outside a round
// (after a failed attempt, or after a late SET), reporting the call to the
// observers.
func (c *Client) observedRelease(ctx context.Context, i int, key, value string) (bool, error) {
	if c.obs == nil {
		return c.nodes[i].EvalRelease(ctx, key, value)
	}
	began := time.Now()
	ok, err := c.nodes[i].EvalRelease(ctx, key, value)
	c.observeNode(ctx, i, OpRelease, key[len(c.prefix):], began, ok, err)
	return ok, err
}
