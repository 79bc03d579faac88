package redlock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// WithLogger makes the Client log what it does to l, as an Observer beside
// any others:
//
//   - Warn: a lock lost ("redlock: lock lost", with how it was found: an
//     Extend, its validity running out, Unlock, TTL, or Client.Close
//     stopping a Do's extensions, and why, as the attribute "err" when
//     LockEnd.Err says it: the failed call's error, with the nodes' errors
//     that made the lock lost, which are otherwise only in Debug records),
//     and an Extend that failed while the lock
//     was still held ("redlock: extend failed", with the validity left; not
//     one its caller canceled, nor one that sent nothing since its context
//     had ended, nor one of a lock already found lost or unlocked, nor one
//     given a TTL out of range: bad input, returned to its caller, is
//     logged at Debug as "redlock: extend refused: bad TTL"); and a node
//     that refuses to tell which server it is ("redlock: node does not
//     tell which server it is", OpIdentity: an ACL user without +info,
//     NOPERM, or INFO renamed away), so that one server under two addresses
//     would count twice towards the quorum, unseen (not a node that fails
//     every call for good, such as with a wrong password: its calls' errors
//     say why).
//   - Debug: every acquisition attempt (outcome, votes, duration), the wait
//     of every Lock, every Extend, Unlock and Do, every node call that failed,
//     and every waiter woken to try again ("redlock: woken to try again": by
//     a release, by the end of another attempt of its Client on the key
//     that it found in flight, by a subscription to the key's releases made
//     again or confirmed late, or by the end of the releases of the keys its
//     own failed attempts left: see Observer's Wake; the event does not say
//     which).
//
// Every record about a lock carries its key as the attribute "key" (without
// the Client's prefix). No record contains a lock's value or a node's password:
// nodes are named as in NodeError. A nil l is an error.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		c.set |= optObserver
		if l == nil {
			c.errs = append(c.errs, errors.New("redlock: WithLogger(nil)"))
			return
		}
		c.observers = append(c.observers, logObserver{l})
	}
}

// logObserver is the Observer of WithLogger.
type logObserver struct{ l *slog.Logger }

func (o logObserver) debug(ctx context.Context) bool { return o.l.Enabled(ctx, slog.LevelDebug) }

func errAttr(err error) slog.Attr { return slog.String("err", err.Error()) }

func (o logObserver) Do(ctx context.Context, e DoStart) (context.Context, func(DoDone)) {
	if !o.debug(ctx) {
		return ctx, nil
	}
	return ctx, func(d DoDone) {
		attrs := []slog.Attr{slog.String("key", d.Key), slog.Duration("duration", d.Duration), slog.Bool("lost", d.Lost)}
		if d.Err != nil {
			attrs = append(attrs, errAttr(d.Err))
		}
		o.l.LogAttrs(ctx, slog.LevelDebug, "redlock: do", attrs...)
	}
}

func (o logObserver) Lock(ctx context.Context, e LockStart) (context.Context, func(LockDone)) {
	if !o.debug(ctx) {
		return ctx, nil
	}
	return ctx, func(d LockDone) {
		attrs := []slog.Attr{slog.String("key", d.Key), slog.Int("attempts", d.Attempts), slog.Duration("wait", d.Duration)}
		if d.Token != 0 {
			attrs = append(attrs, slog.Uint64("token", d.Token))
		}
		msg := "redlock: lock obtained"
		if d.Err != nil {
			msg = "redlock: lock not obtained"
			attrs = append(attrs, errAttr(d.Err))
		}
		o.l.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
	}
}

func votesAttrs(attrs []slog.Attr, v Votes) []slog.Attr {
	return append(attrs, slog.Int("granted", v.Granted), slog.Int("refused", v.Refused),
		slog.Int("failed", v.Failed), slog.Int("quorum", v.Quorum), slog.Int("nodes", v.Nodes))
}

func (o logObserver) Attempt(ctx context.Context, e AttemptStart) (context.Context, func(AttemptDone)) {
	if !o.debug(ctx) {
		return ctx, nil
	}
	return ctx, func(d AttemptDone) {
		attrs := []slog.Attr{slog.String("key", d.Key), slog.Int("attempt", d.Attempt), slog.String("outcome", string(d.Outcome))}
		attrs = votesAttrs(attrs, d.Votes)
		attrs = append(attrs, slog.Duration("duration", d.Duration))
		if d.Token != 0 {
			attrs = append(attrs, slog.Uint64("token", d.Token))
		}
		if d.Err != nil {
			attrs = append(attrs, errAttr(d.Err))
		}
		o.l.LogAttrs(ctx, slog.LevelDebug, "redlock: attempt", attrs...)
	}
}

func (o logObserver) Extend(ctx context.Context, e ExtendStart) (context.Context, func(ExtendDone)) {
	return ctx, func(d ExtendDone) {
		left := time.Until(d.Until)
		level, msg := slog.LevelDebug, "redlock: extended"
		switch {
		case d.Err == nil:
		case errors.Is(d.Err, context.Canceled):
			// The caller gave up (as Do does with an extension in
			// flight when its function returns): not the lock's trouble.
			msg = "redlock: extend canceled"
		case errors.Is(d.Err, ErrAlreadyUnlocked):
			// The holder's own Unlock came first.
			msg = "redlock: extend after unlock"
		case errors.As(d.Err, new(badTTL)):
			// Bad input, the caller's error, returned to it: the
			// lock is as held as before.
			msg = "redlock: extend refused: bad TTL"
		case errors.Is(d.Err, errNotSent):
			// Its context had ended: it sent nothing, changed nothing.
			msg = "redlock: extend not sent"
		case errors.Is(d.Err, errOver):
			// The lock was over before it was judged: found lost by
			// another call (LockEnd warned), with validity left on
			// its clock, or its validity had ended. Not still held.
			msg = "redlock: extend failed"
		case !d.Lost && left > 0:
			level, msg = slog.LevelWarn, "redlock: extend failed"
		default:
			// Lost (LockEnd warns), or validity already over.
			msg = "redlock: extend failed"
		}
		if !o.l.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{slog.String("key", d.Key), slog.Duration("ttl", d.TTL)}
		attrs = votesAttrs(attrs, d.Votes)
		attrs = append(attrs, slog.Duration("duration", d.Duration), slog.Duration("validity_left", max(left, 0)))
		if d.Err != nil {
			attrs = append(attrs, errAttr(d.Err))
		}
		o.l.LogAttrs(ctx, level, msg, attrs...)
	}
}

func (o logObserver) Unlock(ctx context.Context, e UnlockStart) (context.Context, func(UnlockDone)) {
	if !o.debug(ctx) {
		return ctx, nil
	}
	return ctx, func(d UnlockDone) {
		attrs := []slog.Attr{slog.String("key", d.Key)}
		attrs = votesAttrs(attrs, d.Votes)
		attrs = append(attrs, slog.Duration("duration", d.Duration))
		msg := "redlock: unlocked"
		if d.Err != nil {
			msg = "redlock: unlock failed"
			attrs = append(attrs, errAttr(d.Err))
		}
		o.l.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
	}
}

func (o logObserver) NodeCall(ctx context.Context, e NodeCall) {
	if e.Operation == OpIdentity && driver.CommandRefused(e.Err) {
		o.l.LogAttrs(ctx, slog.LevelWarn, "redlock: node does not tell which server it is",
			slog.String("node", e.Node), errAttr(e.Err),
			slog.String("consequence", "if two addresses of the nodes are one server, it counts twice towards the quorum, unseen"))
		return
	}
	if e.Err == nil || !o.debug(ctx) {
		return
	}
	o.l.LogAttrs(ctx, slog.LevelDebug, "redlock: node error",
		slog.String("key", e.Key), slog.String("node", e.Node), slog.String("operation", e.Operation),
		slog.Duration("duration", e.Duration), errAttr(e.Err))
}

func (o logObserver) LockEnd(ctx context.Context, e LockEnd) {
	level, msg := slog.LevelDebug, "redlock: lock released"
	if e.Lost() {
		level, msg = slog.LevelWarn, "redlock: lock lost"
	}
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("key", e.Key), slog.String("how", e.How), slog.Duration("held", e.Held)}
	if e.Token != 0 {
		attrs = append(attrs, slog.Uint64("token", e.Token))
	}
	if e.Err != nil {
		attrs = append(attrs, errAttr(e.Err))
	}
	o.l.LogAttrs(ctx, level, msg, attrs...)
}

func (o logObserver) Wake(ctx context.Context, e Wake) {
	if o.debug(ctx) {
		o.l.LogAttrs(ctx, slog.LevelDebug, "redlock: woken to try again", slog.String("key", e.Key), slog.Int("attempt", e.Attempt))
	}
}
