package safety_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// The checker: every grant becomes an interval of virtual time, from the
// moment the call returned the lock (or Do started fn) to the earliest of the
// Until last reported, the Unlock call (fn's return) and, for Do, the
// cancellation of fn's context. In a safe schedule no two intervals of a key
// overlap, and fencing tokens rise in grant order. Contract checks on every
// call add violations of their own kinds.

// Kinds of violation.
const (
	vOverlap      = "overlap"                // two grants of a key at once
	vFencing      = "fencing-order"          // a later grant got a token not above an earlier one
	vUntilNodes   = "until-beyond-nodes"     // Until later than a quorum of nodes keeps the key
	vDoCtxNodes   = "do-ctx-beyond-nodes"    // fn's context of Do still live after a quorum of nodes dropped the key
	vExtendEnded  = "extend-after-end"       // an Extend after Until, Done or Unlock did not fail with ErrLockLost
	vUntilMoved   = "until-moved-after-end"  // an Extend after the end moved Until
	vDoneOpen     = "done-open-after-until"  // Done not closed although Until has passed
	vUnlockDone   = "done-open-after-unlock" // Done not closed after Unlock
	vLiveness     = "liveness"               // no grant within TTL plus backoff once faults healed and holders released
	vLeak         = "goroutines-left"        // the bubble still had goroutines when the schedule ended
	vPanic        = "panic"                  // a panic other than fn's own, or fn's changed
	vGrantInvalid = "grant-without-validity" // a lock returned with Until already passed
	vTokenMissing = "token-missing"          // WithFencing, and the token is 0
	vDoError      = "do-error"               // Do returned an error that does not match what fn returned
	vUnexpected   = "unexpected-error"       // an error that no fault explains (bad input, closed client)
)

type event struct {
	at   time.Duration
	who  string
	key  string
	what string
}

type violation struct {
	kind string
	at   time.Duration
	key  string
	msg  string
	a, b *simGrant // the grants of an overlap
}

type simGrant struct {
	id    int
	key   string
	who   string
	via   string
	start time.Time
	until time.Time // as last reported; for Do, the cancellation of fn's context
	end   time.Time // Unlock called, or fn returned; zero while held
	token uint64
	// cleanRelease: the holder's own Unlock ran with no node fault in force
	// from its start to its end, so it alone must free the key.
	cleanRelease bool
}

type heldLock struct {
	g *simGrant
	l *redlock.Lock
}

// finish is the end of the grant's interval.
func (g *simGrant) finish() time.Time {
	if !g.end.IsZero() && g.end.Before(g.until) {
		return g.end
	}
	return g.until
}

var forever = time.Unix(0, math.MaxInt64)

// sim is one schedule's world: the nodes, their clocks, and what the checker
// has recorded.
type sim struct {
	s      *schedule
	t0     time.Time
	mem    []*memory.Node
	clocks []*simClock
	quorum int
	bubble string // "synctest bubble N", to find its goroutines in a stack dump

	mu         sync.Mutex
	grants     []*simGrant
	held       []heldLock // every Lock granted, for the final release
	active     int        // node faults in force
	epoch      int        // node faults begun so far
	trace      []event
	violations []violation
	faults     int
}

func (sm *sim) since() time.Duration { return time.Since(sm.t0) }

func (sm *sim) logf(who, key, format string, args ...any) {
	e := event{at: sm.since(), who: who, key: key, what: fmt.Sprintf(format, args...)}
	sm.mu.Lock()
	sm.trace = append(sm.trace, e)
	sm.mu.Unlock()
}

func (sm *sim) fault(who, key, format string, args ...any) {
	sm.mu.Lock()
	sm.faults++
	sm.mu.Unlock()
	sm.logf(who, key, format, args...)
}

// nodeFault records a fault on a node beginning (+1), healing (-1) or
// striking once (0), and logs it unless it heals.
func (sm *sim) nodeFault(delta int, who, key, format string, args ...any) {
	sm.mu.Lock()
	sm.active += delta
	if delta >= 0 { // 0: a fault that strikes once
		sm.epoch++
		sm.faults++
	}
	sm.mu.Unlock()
	if delta < 0 {
		return
	}
	sm.logf(who, key, format, args...)
}

func (sm *sim) violate(kind, key, format string, args ...any) {
	v := violation{kind: kind, at: sm.since(), key: key, msg: fmt.Sprintf(format, args...)}
	sm.mu.Lock()
	sm.violations = append(sm.violations, v)
	sm.mu.Unlock()
	sm.logf("CHECK", key, "%s: %s", kind, v.msg)
}

// granted records a grant returned by TryLock or Lock, and checks it.
func (sm *sim) granted(who, via string, l *redlock.Lock) *simGrant {
	now := time.Now()
	g := &simGrant{key: l.Key(), who: who, via: via, start: now, until: l.Until(), token: l.Token()}
	sm.mu.Lock()
	g.id = len(sm.grants) + 1
	sm.grants = append(sm.grants, g)
	sm.mu.Unlock()
	sm.logf(who, g.key, "%s granted #%d until +%v token %d", via, g.id, g.until.Sub(sm.t0), g.token)
	if !now.Before(g.until) {
		sm.violate(vGrantInvalid, g.key, "#%d returned by %s with Until %v already passed", g.id, via, g.until.Sub(sm.t0))
	}
	if sm.s.fencing && g.token == 0 {
		sm.violate(vTokenMissing, g.key, "#%d has no fencing token", g.id)
	}
	sm.checkNodes(g, "grant")
	return g
}

// grantedDo records the start of a Do's fn, with the fencing token its
// context gives (redlock.TokenFrom), checked as a Lock's is.
func (sm *sim) grantedDo(who, key string, fctx context.Context) *simGrant {
	token, _ := redlock.TokenFrom(fctx)
	g := &simGrant{key: key, who: who, via: "Do", start: time.Now(), until: forever, token: token}
	sm.mu.Lock()
	g.id = len(sm.grants) + 1
	sm.grants = append(sm.grants, g)
	sm.mu.Unlock()
	sm.logf(who, key, "Do fn starts: grant #%d token %d", g.id, g.token)
	if sm.s.fencing && g.token == 0 {
		sm.violate(vTokenMissing, g.key, "#%d (Do) has no fencing token in fn's context", g.id)
	}
	return g
}

// report records the Until a holder has just read.
func (sm *sim) report(g *simGrant, until time.Time) {
	sm.mu.Lock()
	g.until = until
	sm.mu.Unlock()
}

// canceled records when Do canceled fn's context.
func (sm *sim) canceled(g *simGrant) {
	now := time.Now()
	sm.mu.Lock()
	g.until = now
	sm.mu.Unlock()
	sm.logf(g.who, g.key, "Do canceled fn's context of #%d", g.id)
}

// faultState returns the node faults in force and begun so far.
func (sm *sim) faultState() (active, epoch int) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.active, sm.epoch
}

// ended records Unlock being called, or fn returning.
func (sm *sim) ended(g *simGrant) {
	now := time.Now()
	sm.mu.Lock()
	if g.end.IsZero() {
		g.end = now
	}
	sm.mu.Unlock()
}

// checkNodes checks that a quorum of nodes keeps g's key at least until its
// Until, on the virtual clock, counting each node's clock rate. It is called
// only while no other call on the lock is in flight. A node's key may belong
// to another grant only if exclusion already failed, which the overlap check
// catches.
func (sm *sim) checkNodes(g *simGrant, after string) {
	if sm.s.class != safeSchedule {
		return
	}
	sm.mu.Lock()
	until := g.until
	sm.mu.Unlock()
	if !time.Now().Before(until) {
		return
	}
	if keep, left := sm.keeping(g.key, until); keep < sm.quorum {
		sm.violate(vUntilNodes, g.key, "after %s of #%d: Until +%v, but only %d nodes keep the key that long (expiries %v, quorum %d)",
			after, g.id, until.Sub(sm.t0), keep, left, sm.quorum)
	}
}

// checkCanceled checks, when fn's context of grant g (a Do's) has just
// ended, before fn returns, that a quorum of nodes still keeps the key:
// fn's context must end when the lock's validity does, not after (Do
// reports no Until to its fn, so this is its counterpart of checkNodes).
// The key may be another grant's only if exclusion already failed, which
// the overlap check catches.
func (sm *sim) checkCanceled(g *simGrant) {
	if sm.s.class != safeSchedule {
		return
	}
	now := time.Now()
	if keep, left := sm.keeping(g.key, now); keep < sm.quorum {
		sm.violate(vDoCtxNodes, g.key, "Do canceled fn's context of #%d at +%v, but only %d nodes kept the key until then (expiries %v, quorum %d)",
			g.id, now.Sub(sm.t0), keep, left, sm.quorum)
	}
}

// keeping returns how many nodes keep key at least until until, on the
// virtual clock, counting each node's clock rate, and each node's expiry of
// it ("-" for none).
func (sm *sim) keeping(key string, until time.Time) (keep int, left []string) {
	now := time.Now()
	for i, m := range sm.mem {
		pttl, ok := m.PTTL(key)
		if !ok {
			left = append(left, "-")
			continue
		}
		exp := now.Add(sm.clocks[i].real(pttl))
		left = append(left, exp.Sub(sm.t0).String())
		if !exp.Before(until) {
			keep++
		}
	}
	return keep, left
}

// holder returns a grant held now with at least left of validity, if any.
func (sm *sim) holder(left time.Duration) *simGrant {
	now := time.Now()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	for _, g := range slices.Backward(sm.grants) {
		if g.end.IsZero() && g.until.Sub(now) >= left {
			return g
		}
	}
	return nil
}

// analyze runs the checks on the whole history: overlaps and fencing order.
func (sm *sim) analyze() {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	byKey := map[string][]*simGrant{}
	for _, g := range sm.grants {
		byKey[g.key] = append(byKey[g.key], g)
	}
	for key, gs := range byKey {
		slices.SortStableFunc(gs, func(a, b *simGrant) int { return a.start.Compare(b.start) })
		var last *simGrant // the grant with the latest finish so far
		for _, g := range gs {
			if last != nil && g.start.Before(last.finish()) && g.start.Before(g.finish()) {
				sm.violations = append(sm.violations, violation{
					kind: vOverlap, at: g.start.Sub(sm.t0), key: key, a: last, b: g,
					msg: fmt.Sprintf("#%d (%s %s, %s) and #%d (%s %s, %s) of %s",
						last.id, last.who, last.via, sm.span(last), g.id, g.who, g.via, sm.span(g), key),
				})
			}
			if last == nil || g.finish().After(last.finish()) {
				last = g
			}
		}
		var prev *simGrant // the last grant with a token
		for _, g := range gs {
			if g.token == 0 {
				continue
			}
			if prev != nil && g.token <= prev.token {
				sm.violations = append(sm.violations, violation{
					kind: vFencing, at: g.start.Sub(sm.t0), key: key, a: prev, b: g,
					msg: fmt.Sprintf("#%d granted at +%v got token %d, #%d granted before it at +%v had %d",
						g.id, g.start.Sub(sm.t0), g.token, prev.id, prev.start.Sub(sm.t0), prev.token),
				})
			}
			prev = g
		}
	}
	slices.SortStableFunc(sm.violations, func(a, b violation) int { return int(a.at - b.at) })
}

func (sm *sim) span(g *simGrant) string {
	f := "held"
	if fin := g.finish(); !fin.Equal(forever) {
		f = "+" + fin.Sub(sm.t0).String()
	}
	return fmt.Sprintf("[+%v, %s]", g.start.Sub(sm.t0), f)
}

// count counts the violations of kind found.
func (sm *sim) count(kind string) int {
	n := 0
	for _, v := range sm.violations {
		if v.kind == kind {
			n++
		}
	}
	return n
}

// traceMax is how many events a failure report shows at most.
const traceMax = 40

// failureReport describes a violation of a failed schedule: its seed, the
// schedule, and the events that led to it, shortened to those about its key
// (and the faults) in a window before it.
func (sm *sim) failureReport(v violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SIM FAIL %s\n  %s\n  rerun: go test -v -run TestSimulation ./safety/ -schedules=1 -seed=%d\n", v.kind, sm.s, sm.s.seed)
	fmt.Fprintf(&b, "  %s at +%v: %s\n", v.kind, v.at, v.msg)
	from, to := v.at-2*sm.s.ttl, v.at+sm.s.ttl/10
	if v.a != nil {
		from = v.a.start.Sub(sm.t0) - sm.s.ttl
		to = max(v.b.start.Sub(sm.t0), v.at) + sm.s.ttl/10
	}
	var lines []string
	for _, e := range sm.trace {
		if !*simFull && (e.at < from || e.at > to || (e.key != "" && v.key != "" && e.key != v.key)) {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %12v %-8s %-3s %s", e.at, e.who, e.key, e.what))
	}
	if len(lines) > traceMax && !*simFull {
		fmt.Fprintf(&b, "  ... %d earlier events\n", len(lines)-traceMax)
		lines = lines[len(lines)-traceMax:]
	}
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}
