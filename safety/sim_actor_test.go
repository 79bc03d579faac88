package safety_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// An actor is a goroutine that uses one Client at random: TryLock, Lock with
// a deadline, and Do, and while it holds a lock, Extend (alone or several at
// once, with TTLs shorter and longer than what is left), pauses within and
// past the validity, and Unlock with live and ended contexts, or no Unlock at
// all. Every call is checked against the Lock's contract as it returns.
type actor struct {
	sm   *sim
	c    *redlock.Client
	name string
	r    *rand.Rand
	ctx  context.Context // never ends; ended contexts are made per call
}

// dur draws a duration in [lo, hi).
func (a *actor) dur(lo, hi time.Duration) time.Duration { return drawDur(a.r, lo, hi) }

func drawDur(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

func (a *actor) run() {
	s := a.sm.s
	for range s.ops {
		time.Sleep(a.dur(0, s.ttl/2))
		key := s.keys[a.r.IntN(len(s.keys))]
		op := a.r.IntN(8)
		if s.class != safeSchedule {
			op = 3 + op%3 // Lock and wait: a rival must be waiting when the fault strikes
		}
		switch {
		case op < 3:
			l, err := a.c.TryLock(a.ctx, key)
			a.logCall("TryLock", key, err)
			if err == nil {
				a.hold(a.sm.granted(a.name, "TryLock", l), l)
			} else {
				a.expectNotObtained("TryLock", key, err)
			}
		case op < 6:
			wait := a.wait()
			ctx, cancel := context.WithTimeout(a.ctx, wait)
			l, err := a.c.Lock(ctx, key)
			cancel()
			a.logCall(fmt.Sprintf("Lock(≤%v)", wait), key, err)
			if err == nil {
				a.hold(a.sm.granted(a.name, "Lock", l), l)
			} else {
				a.expectNotObtained("Lock", key, err)
			}
		default:
			a.do(key)
		}
	}
}

// wait draws how long Lock or Do may wait: mostly up to a TTL, sometimes up
// to three (a wait costs a poll per backoff).
func (a *actor) wait() time.Duration {
	s := a.sm.s
	if a.r.IntN(4) == 0 || s.class != safeSchedule {
		return a.dur(s.nodeTimeout, 3*s.ttl)
	}
	return a.dur(s.nodeTimeout, s.ttl)
}

func (a *actor) logCall(what, key string, err error) {
	if err != nil {
		a.sm.logf(a.name, key, "%s: %s", what, short(err))
	}
}

// short is the first line of an error: the sentinel and the vote summary.
func short(err error) string {
	s := err.Error()
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i] + " …"
		}
	}
	return s
}

func (a *actor) expectNotObtained(what, key string, err error) {
	if !errors.Is(err, redlock.ErrNotObtained) {
		a.sm.violate(vUnexpected, key, "%s: %v", what, err)
	}
}

// hold uses a granted lock, then releases it (or lets it expire).
func (a *actor) hold(g *simGrant, l *redlock.Lock) {
	s := a.sm.s
	a.sm.keep(g, l)
	unlocked := false
	// Most holders watch Done; the others never call it before Unlock, as
	// a holder that relies on Until alone does.
	watch := a.r.IntN(3) != 0
	for range a.r.IntN(5) {
		switch a.r.IntN(8) {
		case 0: // work within the validity
			time.Sleep(a.dur(0, max(time.Until(l.Until())/2, 0)))
		case 1: // a pause past the validity: GC, swapping, a stopped VM
			var d time.Duration
			if a.r.IntN(2) == 0 {
				// Into the window where the nodes still keep the key.
				dr := drift(s.ttl, s.driftFactor)
				d = time.Until(l.Until()) + a.dur(-dr/2, 2*dr)
			} else {
				d = time.Until(l.Until()) + a.dur(0, s.ttl)
			}
			if d > 0 {
				a.sm.fault(a.name, g.key, "client pauses %v while holding #%d", d, g.id)
				time.Sleep(d)
			}
		case 2, 3:
			a.extend(g, l, a.extendTTL(l), unlocked, watch, true)
		case 4: // concurrent Extends with different TTLs
			n := 2 + a.r.IntN(2)
			ttls := make([]time.Duration, n)
			for i := range ttls {
				ttls[i] = a.extendTTL(l)
			}
			var wg sync.WaitGroup
			for _, ttl := range ttls {
				wg.Go(func() { a.extend(g, l, ttl, unlocked, watch, false) })
			}
			wg.Wait()
		case 5: // Unlock early, then keep using the Lock
			if !unlocked {
				a.unlock(g, l)
				unlocked = true
			}
		case 6:
			time.Sleep(a.dur(0, s.nodeTimeout))
		case 7: // ask the nodes how long the lock has left
			a.ttl(g, l, unlocked)
		}
		a.observe(g, l, unlocked, watch)
	}
	if unlocked {
		return
	}
	switch a.r.IntN(6) {
	case 0, 1, 2:
		a.unlock(g, l)
	case 3: // an ended context: canceled
		ctx, cancel := context.WithCancel(a.ctx)
		cancel()
		a.unlockWith(ctx, "canceled", g, l)
	case 4: // an ended context: past its deadline
		ctx, cancel := context.WithDeadline(a.ctx, time.Now().Add(-time.Millisecond))
		a.unlockWith(ctx, "deadline passed", g, l)
		cancel()
	default:
		a.sm.logf(a.name, g.key, "abandons #%d to expire", g.id)
		return
	}
	if a.r.IntN(4) == 0 {
		a.extend(g, l, a.extendTTL(l), true, true, true) // after the end: must fail
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return short(err)
}

func (a *actor) unlock(g *simGrant, l *redlock.Lock) { a.unlockWith(a.ctx, "live", g, l) }

// unlockWith calls Unlock with ctx, and records whether it ran clear of node
// faults: then it alone must free the key, whatever ctx says.
func (a *actor) unlockWith(ctx context.Context, what string, g *simGrant, l *redlock.Lock) {
	a.sm.ended(g)
	active, epoch := a.sm.faultState()
	err := l.Unlock(ctx)
	_, epoch1 := a.sm.faultState()
	clean := active == 0 && epoch1 == epoch
	a.sm.mu.Lock()
	g.cleanRelease = clean
	a.sm.mu.Unlock()
	a.sm.logf(a.name, g.key, "Unlock(%s) #%d: %v (clear of faults: %v)", what, g.id, errString(err), clean)
	a.checkUnlocked(g, l)
}

func (a *actor) checkUnlocked(g *simGrant, l *redlock.Lock) {
	if !isClosed(l.Done()) {
		a.sm.violate(vUnlockDone, g.key, "#%d: Done still open after Unlock", g.id)
	}
}

// extendTTL draws an Extend TTL: tiny, shorter than what is left, the
// Client's TTL, or longer.
func (a *actor) extendTTL(l *redlock.Lock) time.Duration {
	s := a.sm.s
	left := max(time.Until(l.Until()), 4*time.Millisecond)
	switch a.r.IntN(4) {
	case 0:
		return a.dur(3*time.Millisecond, 3*time.Millisecond+2*s.nodeTimeout)
	case 1:
		return a.dur(3*time.Millisecond, left)
	case 2:
		return s.ttl
	default:
		return a.dur(left, 3*s.ttl)
	}
}

// extend calls Extend and checks it: an Extend that starts after Until,
// after Done closed or after Unlock must fail with ErrLockLost, close Done,
// and (when alone) leave Until where it was. A holder that does not watch
// Done does not call it before the Extend.
func (a *actor) extend(g *simGrant, l *redlock.Lock, ttl time.Duration, unlocked, watch, alone bool) {
	u0 := l.Until()
	done0 := watch && isClosed(l.Done())
	t0 := time.Now()
	over := unlocked || done0 || !t0.Before(u0)
	err := l.Extend(a.ctx, ttl)
	u1 := l.Until()
	if !unlocked {
		a.sm.report(g, u1)
	}
	a.sm.logf(a.name, g.key, "Extend(%v) #%d from +%v: %s; Until +%v → +%v", ttl, g.id, t0.Sub(a.sm.t0), errString(err), u0.Sub(a.sm.t0), u1.Sub(a.sm.t0))
	if err != nil && !errors.Is(err, redlock.ErrLockLost) {
		a.sm.violate(vUnexpected, g.key, "Extend(%v) #%d: %v", ttl, g.id, err)
	}
	if !over {
		return
	}
	why := "after Until"
	switch {
	case unlocked:
		why = "after Unlock"
	case done0:
		why = "after Done closed"
	}
	if !errors.Is(err, redlock.ErrLockLost) {
		a.sm.violate(vExtendEnded, g.key, "Extend(%v) of #%d %s (Until +%v, now +%v) returned %s", ttl, g.id, why, u0.Sub(a.sm.t0), t0.Sub(a.sm.t0), errString(err))
	}
	if alone && u1.After(u0) {
		a.sm.violate(vUntilMoved, g.key, "Extend(%v) of #%d %s moved Until from +%v to +%v", ttl, g.id, why, u0.Sub(a.sm.t0), u1.Sub(a.sm.t0))
	}
	if watch && !isClosed(l.Done()) {
		a.sm.violate(vExtendEnded, g.key, "Extend(%v) of #%d %s left Done open", ttl, g.id, why)
	}
}

// ttl asks the nodes how long the lock has left (Lock.TTL), which may lower
// Until, never raise it: a node's answer may be longer than the lock can
// count on (a stale Extend's PEXPIRE may still land).
func (a *actor) ttl(g *simGrant, l *redlock.Lock, unlocked bool) {
	u0 := l.Until()
	left, err := l.TTL(a.ctx)
	u1 := l.Until()
	if !unlocked {
		a.sm.report(g, u1)
	}
	a.sm.logf(a.name, g.key, "TTL #%d: %v, %s; Until +%v → +%v", g.id, left, errString(err), u0.Sub(a.sm.t0), u1.Sub(a.sm.t0))
	if err != nil && !errors.Is(err, redlock.ErrLockLost) {
		a.sm.violate(vUnexpected, g.key, "TTL #%d: %v", g.id, err)
	}
	if u1.After(u0) {
		a.sm.violate(vUntilMoved, g.key, "TTL of #%d moved Until from +%v to +%v", g.id, u0.Sub(a.sm.t0), u1.Sub(a.sm.t0))
	}
}

// observe reads Until as the holder would, and checks it against Done and
// the nodes. It runs while no other call on the lock is in flight.
func (a *actor) observe(g *simGrant, l *redlock.Lock, unlocked, watch bool) {
	u := l.Until()
	if !unlocked {
		a.sm.report(g, u)
	}
	if watch && time.Now().After(u) && !isClosed(l.Done()) {
		a.sm.violate(vDoneOpen, g.key, "#%d: Until +%v has passed, Done is open", g.id, u.Sub(a.sm.t0))
	}
	if !unlocked {
		a.sm.checkNodes(g, "call")
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errFn is what Do's fn returns when it fails; fnPanic is what it panics with.
var (
	errFn   = errors.New("sim: fn failed")
	fnPanic = errors.New("sim: fn panicked")
)

// do runs Do with an fn that returns, fails, ignores its context or panics.
func (a *actor) do(key string) {
	s := a.sm.s
	wait := a.wait()
	ctx, cancel := context.WithTimeout(a.ctx, wait)
	defer cancel()
	kind := a.r.IntN(4)
	work := a.dur(0, 2*s.ttl)
	var (
		g       *simGrant
		err     error
		p       any
		started bool
	)
	func() {
		defer func() { p = recover() }()
		err = a.c.Do(ctx, key, func(fctx context.Context) error {
			started = true
			g = a.sm.grantedDo(a.name, key, fctx)
			stop := context.AfterFunc(fctx, func() { a.sm.canceled(g) })
			defer stop()
			defer a.sm.ended(g)
			switch kind {
			case 0: // watches its context
				t := time.NewTimer(work)
				defer t.Stop()
				select {
				case <-t.C:
				case <-fctx.Done():
					// Before fn returns, after which Do releases the
					// key: at the instant its context ended, the key
					// is still held.
					a.sm.checkCanceled(g)
				}
				return nil
			case 1:
				time.Sleep(work)
				return errFn
			case 2: // ignores its context: it acts only until the context ends
				time.Sleep(work)
				return nil
			default:
				time.Sleep(work)
				panic(fnPanic)
			}
		})
	}()
	what := []string{"watches ctx", "fails", "ignores ctx", "panics"}[kind]
	a.sm.logf(a.name, key, "Do(≤%v, fn %s %v): %s, panic %v", wait, what, work, errString(err), p)
	switch {
	case p != nil && (kind != 3 || p != any(fnPanic)):
		a.sm.violate(vPanic, key, "Do panicked with %v (fn %s)", p, what)
	case !started:
		if !errors.Is(err, redlock.ErrNotObtained) {
			a.sm.violate(vUnexpected, key, "Do without running fn: %v", err)
		}
	case kind == 3 && p == nil:
		a.sm.violate(vPanic, key, "Do #%d swallowed fn's panic: returned %v", g.id, err)
	case kind == 1 && !errors.Is(err, errFn):
		a.sm.violate(vDoError, key, "Do #%d returned %v, not fn's error", g.id, err)
	}
}

// drift is redlock's allowance for a TTL: ttl*factor + 2ms.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}
