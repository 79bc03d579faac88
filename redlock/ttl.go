package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// errNoTTLer is a node's failure in TTL when it does not implement
// driver.TTLer.
var errNoTTLer = errors.New("the node cannot tell a key's time to live (no driver.TTLer)")

// errTTLNotAsked is TTL's error, beside ErrLockLost and ctx.Err(), when its
// context had ended before it asked anything: as Extend's errNotSent, no
// votes, which would read as nodes that held nothing.
var errTTLNotAsked = errors.New("redlock: TTL asked nothing: its context had ended")

// TTL asks the nodes how long they still hold the lock: a quorum guarantees
// it for the quorum-th largest remaining time to live among the nodes that
// still hold this lock's value, less the time the call took and the drift
// allowance. Once a quorum said it holds the lock, it waits for every
// node's answer, each bounded by the node timeout (or until ctx ends), since
// a later answer may raise that time; when too few can hold it for a quorum,
// it returns then, with ErrLockLost (below). It moves Until to
// that if it is earlier; it never moves Until later (Extend does). When an
// Extend was in flight while the nodes were asked (not yet judged when TTL
// began, or begun before it judged), the answers may predate its PEXPIREs:
// when that Extend succeeded before TTL judged, its own outcome sets Until
// (see Extend), and TTL leaves Until alone; otherwise the answers lower
// Until at once, as far as they say, even while that Extend is in flight
// (nothing says yet that its PEXPIREs landed, and the keys may expire when
// the answers said), and the Extend, if it then succeeds before that Until,
// sets Until from its own start as ever. It returns the time left until
// Until then, which is less than what the nodes guarantee when Until was
// already earlier (an Extend of a shorter TTL, in flight or failed, may
// still land on the nodes).
//
// It returns an error matching ErrLockLost when fewer than a quorum hold the
// lock, when Until has passed, or after Unlock, with the per-node causes and
// the votes (*VoteError) joined in when the nodes were asked; the error
// matches ErrUnavailable too when so many nodes failed that no quorum could
// answer. When so many nodes said they no longer hold it that no quorum can,
// Done is closed. When ctx had ended, ctx.Err() is in every error. With a
// context that has ended already, TTL asks nothing and changes nothing (the
// lock is still held until Until), and returns an error matching ErrLockLost
// with ctx.Err() joined in, as Extend does. After the Client's Close, the
// error matches ErrClosed too: a lock that has ended says so at once, and
// the closed nodes that a lock still held asks answer ErrClosed.
//
// Nodes must implement driver.TTLer, as every driver of this module does; a
// node that does not counts as failed.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if l.unmade() {
		return 0, badInput(ctx, errNilLock)
	}
	if ctx == nil {
		return 0, errNilContext
	}
	c := l.c
	if c.obs != nil {
		defer l.reportEnd(ctx) // a loss or expiry this call found
	}
	start := c.now()
	l.mu.Lock()
	over, unlocked, ttl := l.overLocked(start), l.unlocked, l.ttl
	// An Extend that succeeds while the nodes are asked may have applied
	// its PEXPIREs after their reads, and then set Until from them (see
	// the end).
	succeeded := l.succeeded
	l.mu.Unlock()
	// ctx.Err(), when ctx had ended, is in every error (nil is left out);
	// so is ErrClosed after Close (a lock not over asks the closed nodes,
	// whose errors say it).
	var closedErr error
	if c.closed.Load() {
		closedErr = ErrClosed
	}
	switch {
	case unlocked:
		return 0, errors.Join(ErrLockLost, ErrAlreadyUnlocked, closedErr, ctx.Err())
	case over:
		return 0, errors.Join(ErrLockLost, errOver, closedErr, ctx.Err())
	case ctx.Err() != nil:
		return 0, errors.Join(ErrLockLost, errTTLNotAsked, closedErr, ctx.Err())
	}
	left := make([]time.Duration, len(c.nodes)) // by node, read once it replied
	r := c.start(ctx, OpTTL, l.name, func(ctx context.Context, i int, n driver.Node) (bool, error) {
		t, ok := n.(driver.TTLer)
		if !ok {
			return false, errNoTTLer
		}
		d, held, err := t.TTL(ctx, l.key, l.value)
		left[i] = d
		return held, err
	})
	if !r.wait(ctx) {
		err := r.err(ctx, ErrLockLost)
		if r.lost() {
			now := c.now()
			l.mu.Lock()
			// A lock whose validity passed before this verdict ended
			// then, as expired (overLocked), as Extend's does.
			if !l.overLocked(now) && l.endLocked() {
				l.endHow, l.cause = endLostTTL, err
			}
			l.mu.Unlock()
		}
		return 0, err
	}
	// Hear every node (each bounded by the node timeout): a node that
	// answers last may raise the quorum-th largest TTL, and a low answer
	// would lower Until for nothing.
collect:
	for r.pendingCount() > 0 {
		if rep, ok := r.ready(); ok {
			r.record(rep)
			continue
		}
		select {
		case v := <-r.replies:
			rep := r.take(v)
			r.record(rep)
		case <-ctx.Done():
			break collect
		}
	}
	held := make([]time.Duration, 0, r.yes)
	for i, s := range r.state {
		if s == granted {
			held = append(held, left[i])
		}
	}
	slices.Sort(held)
	guaranteed := held[len(held)-c.quorum] // the quorum-th largest
	d := drift(ttl, c.driftFactor)
	at := start.Add(guaranteed - d)
	now := c.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	// The answers say how long the nodes held the key when they read it.
	// An Extend that succeeded since this call began may have set a
	// longer time to live since, on a quorum: its own judgement set Until,
	// and the answers, which may be the older time to live, lower it no
	// further; they would end a lock the Extend's quorum holds. Otherwise
	// they stand, now, even while an Extend that overlapped them is still
	// in flight: until it is judged, nothing says that its PEXPIREs
	// landed, and the keys may expire when the answers said (a quorum
	// holds the lock no longer). If it then succeeds, it sets Until from
	// its own start (see finishExtend); if the answers' Until has passed
	// by then, the lock is over and the Extend fails.
	if !l.overLocked(now) && at.Before(l.until) && l.succeeded == succeeded {
		l.setUntilLocked(at, now) // ends the lock if at has passed
	}
	if rest := l.until.Sub(now); rest > 0 && !l.ended {
		return rest, nil
	}
	if l.unlocked { // the holder's Unlock ran while the nodes were asked
		return 0, errors.Join(ErrLockLost, ErrAlreadyUnlocked, ctx.Err())
	}
	if at.After(now) {
		// The answers left validity: the lock had ended by then
		// otherwise. Its Until passed while the nodes were asked (an
		// Extend of a shorter TTL may have lowered it below what they
		// keep), or another call found it lost.
		if !now.Before(l.until) {
			return 0, errors.Join(ErrLockLost, fmt.Errorf("no validity left: the lock's validity ended %v into this call, which took %v (a quorum holds the key for %v, the drift allowance is %v)", l.until.Sub(start), now.Sub(start), guaranteed, d), ctx.Err())
		}
		return 0, errors.Join(ErrLockLost, errOver, ctx.Err())
	}
	return 0, errors.Join(ErrLockLost, fmt.Errorf("no validity left: a quorum holds it for %v, the call took %v, the drift allowance is %v", guaranteed, now.Sub(start), d), ctx.Err())
}
