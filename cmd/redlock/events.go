package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/plural"
	"github.com/go-redlock/redlock/redlock"
)

// lockEvents is the Observer of the Client of run and hold: it learns the
// token and validity of the lock that Do obtains (which Do does not hand to
// its function), how its release went, and, with --verbose, is the one place
// that tells on stderr what happens to the lock: the wait, the grant, failed
// extensions, the loss, the release.
type lockEvents struct {
	redlock.NopObserver
	verbose bool
	// warnUnavailable tells, even without verbose, that the wait goes on
	// while too many nodes fail: a wait that would otherwise be silent for
	// as long as they do.
	warnUnavailable bool
	// oneAttempt is --wait 0: no wait follows a refusal, so none is told.
	oneAttempt bool
	stderr     io.Writer
	// addrs are the nodes' addresses, as given (see tlsHints).
	addrs []string

	mu          sync.Mutex
	token       uint64
	until       time.Time                // validity at the grant
	told        map[redlock.Outcome]bool // the reasons to wait told already
	extendFails int                      // failed extensions since the last that succeeded
	lost        bool                     // a LockEnd told the loss
	// lostAtUnlock is the LockEnd of a lock that Unlock could not confirm
	// held (EndLostUnlock), which Unlock's end tells, knowing whether the
	// nodes said so or failed.
	lostAtUnlock *redlock.LockEnd
	unlockErr    error // the last Unlock's
	unlockCalled bool
	// unlocking is set when Unlock begins; from then on released records
	// the nodes that answered a release of the key (Unlock's own, or the
	// Client's background repeat of one that failed), of nodes in all:
	// true for one that deleted the key, false for one that no longer held
	// it.
	unlocking bool
	released  map[string]bool
	nodes     int
	// refusedNotices are the nodes that refused the wait's subscription
	// to the key's releases, told once each.
	refusedNotices map[string]bool
	// ttl is the locks' TTL, which every extension of Do asks for.
	ttl time.Duration
	// holders are the nodes that granted the lock or said yes to an
	// extension of it, each with the earliest time its key expires there
	// (see acquireAnswered, extendAnswered); forgot, those
	// that said no before that time, told once each; forgotten, those of
	// forgot not told yet.
	// broken are the nodes that refused an acquisition for good, not
	// told yet; brokenTold, every such node.
	broken     []redlock.NodeCall
	brokenTold map[string]bool
	// anonymous are the nodes that refused to tell which server they are,
	// told once each.
	anonymous map[string]bool
	// failing are the nodes whose latest call failed, told (with
	// --verbose) once until they answer again (see nodeFailed);
	// failedWith, the error told of each.
	failing    map[string]bool
	failedWith map[string]string
	holders    map[string]time.Time
	forgot     map[string]bool
	forgotten  []string
	// extendErrs are the nodes whose latest extension call failed, with
	// its error; endHow is how the lock was found lost (LockEnd.How);
	// causeTold, whether lossCause told them (see lossCause).
	extendErrs map[string]error
	// refusedExtend are the nodes that refused an extension with an error
	// retrying cannot fix, not told yet: the next extension that succeeds
	// on the others tells them, even without --verbose (see
	// tellRefusedExtend); refusedExtendTold, every node told so.
	refusedExtend     []redlock.NodeCall
	refusedExtendTold map[string]bool
	endHow            string
	endErr            error // LockEnd.Err of the loss: its votes say how it was found
	causeTold         bool
	// firstDone, made by withLock, is closed when the first attempt to
	// obtain the lock has ended; firstGranted says whether it obtained it.
	firstDone    chan struct{}
	firstEnded   bool
	firstGranted bool
}

// grantedFirst reports whether the first attempt obtained the lock, once
// firstDone is closed.
func (e *lockEvents) grantedFirst() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.firstGranted
}

// granted returns the token and validity of the lock obtained.
func (e *lockEvents) granted() (token uint64, until time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.token, e.until
}

// unlocked reports whether Unlock was called, and its error.
func (e *lockEvents) unlocked() (called bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.unlockCalled, e.unlockErr
}

// say writes one line to stderr with --verbose.
func (e *lockEvents) say(format string, args ...any) {
	if e.verbose {
		e.warn(format, args...)
	}
}

// warn writes one line to stderr.
func (e *lockEvents) warn(format string, args ...any) {
	fmt.Fprintf(e.stderr, "redlock: "+format+"\n", args...)
}

// Attempt records the grant, and says (once for each reason) why the wait
// goes on.
func (e *lockEvents) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	sets := new(attemptSets)
	return context.WithValue(ctx, attemptSetsKey{}, sets), func(d redlock.AttemptDone) {
		var unavailable string // told below, outside the lock: tlsHints asks the nodes
		defer func() {
			if unavailable != "" {
				for _, h := range tlsHints(ctx, e.addrs, d.Err) { // ends with the wait (SIGINT, --wait)
					unavailable += "\n" + h
				}
				e.warn("%s", unavailable)
			}
		}()
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.firstEnded {
			e.firstEnded, e.firstGranted = true, d.Outcome == redlock.OutcomeGranted
			close(e.firstDone)
		}
		switch d.Outcome {
		case redlock.OutcomeGranted:
			e.token, e.until = d.Token, d.Until
			e.grantedDespite(sets.yes)
			e.tellBroken()
			sets.granted = true
			for node, expires := range sets.yes {
				e.holdsUntil(node, expires)
			}
		case redlock.OutcomeNotObtained, redlock.OutcomeUnavailable:
			v := d.Votes
			// A quorum granted the SETs of an attempt whose fencing
			// token was not written: the write's votes, its error's
			// *VoteError, say why, not the SETs' (d.Votes).
			if ve, ok := errors.AsType[*redlock.VoteError](d.Err); ok && errors.Is(d.Err, redlock.ErrFenceNotWritten) {
				v = redlock.Votes{Nodes: ve.Nodes, Quorum: ve.Needed, Granted: ve.Granted, Refused: ve.Refused, Failed: ve.Failed}
			}
			// Its own keys may be what refused it, not another
			// holder's (--node-timeout 1ns: "held elsewhere: 3 of 3
			// nodes refused" with no other client), when the other
			// nodes' refusals alone leave a quorum possible (as
			// redlock's mayWin judges it); otherwise another holds it,
			// whatever its own keys do.
			reason := d.Outcome
			if d.Outcome == redlock.OutcomeNotObtained && v.Own > 0 && v.Refused-v.Own <= v.Nodes-v.Quorum {
				reason = refusedByOwn
			}
			// Once each: the verdicts of a long wait can alternate.
			// A wait refused by its own keys first is still told when
			// another holds the lock.
			if e.told[reason] || e.oneAttempt {
				return
			}
			if e.told == nil {
				e.told = map[redlock.Outcome]bool{}
			}
			e.told[reason] = true
			if reason == refusedByOwn {
				e.say("waiting for %s (%d of %d %s refused, %d granted, %d needed; %d of the refusals may be by this command's own key of an earlier attempt, whose SET or release there failed and whose release is not confirmed yet: a node timeout too short for the nodes leaves such keys until their TTL)", keyText(d.Key), v.Refused, v.Nodes, plural.Nodes(v.Nodes), v.Granted, v.Quorum, v.Own)
			} else if d.Outcome == redlock.OutcomeNotObtained {
				e.say("waiting for %s (held elsewhere: %d of %d %s refused, %d granted, %d needed)", keyText(d.Key), v.Refused, v.Nodes, plural.Nodes(v.Nodes), v.Granted, v.Quorum)
			} else if e.verbose || e.warnUnavailable {
				// Without the nodes' errors that nodeFailed told
				// already (-v), each on its line before this one.
				told := func(err error) bool {
					ne, ok := err.(*redlock.NodeError)
					return ok && ne.Err != nil && e.failedWith[ne.Addr] == ne.Err.Error()
				}
				drop := func(err error) bool { return isNotObtained(err) || told(err) }
				unavailable = fmt.Sprintf("waiting for %s (%d of %d %s failed, %d needed: no quorum possible):\n%v", keyText(d.Key), v.Failed, v.Nodes, plural.Nodes(v.Nodes), v.Quorum, cmp.Or(withoutJoined(d.Err, drop, true), d.Err))
			}
		}
	}
}

// Lock says when and how the lock was obtained.
func (e *lockEvents) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	if !e.verbose {
		return ctx, nil
	}
	return ctx, func(d redlock.LockDone) {
		if d.Err != nil {
			return // the command reports it
		}
		msg := fmt.Sprintf("acquired %s after %v", keyText(d.Key), roundWait(d.Duration))
		if d.Attempts > 1 {
			msg += fmt.Sprintf(" (%d attempts)", d.Attempts)
		}
		if d.Token != 0 {
			msg += fmt.Sprintf(", token %d", d.Token)
		}
		e.say("%s", msg)
	}
}

// Extend says when an extension fails, and when one succeeds again.
func (e *lockEvents) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(d redlock.ExtendDone) {
		e.mu.Lock()
		defer e.mu.Unlock()
		switch {
		case d.Err == nil:
			e.tellForgotten(d.Key)
			e.tellRefusedExtend(d.Key)
			if e.extendFails > 0 {
				e.say("extended %s again after %d failed extension(s)", keyText(d.Key), e.extendFails)
			}
			e.extendFails = 0
		case d.Lost:
			// LockEnd tells, the nodes that forgot the key included.
			e.forgotten = nil
			e.refusedExtend = nil
		case errors.Is(d.Err, context.Canceled), errors.Is(d.Err, redlock.ErrAlreadyUnlocked):
			// Do is done with the lock (CMD exited while the extension was
			// in flight) and releases it: no failure, nothing retried.
		default:
			// Not lost: the keeper retries it while the validity lasts.
			// Its error matches ErrLockLost all the same, which is no
			// cause: the nodes' errors are. One whose validity is over
			// is not retried: LockEnd tells the loss.
			e.extendFails++
			e.refusedExtend = nil // extendCause tells them (-v); the next success, again
			if left := time.Until(d.Until); e.extendFails == 1 && left > 0 {
				e.say("extending %s failed (%d of %d %s agreed, %d needed); retrying while its validity lasts (%v): %s",
					keyText(d.Key), d.Votes.Granted, d.Votes.Nodes, plural.Nodes(d.Votes.Nodes), d.Votes.Quorum, roundWait(left), extendCause(d.Err))
			}
		}
	}
}

// Unlock records how the release went.
func (e *lockEvents) Unlock(ctx context.Context, _ redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	e.mu.Lock()
	e.unlocking = true
	e.mu.Unlock()
	return ctx, func(d redlock.UnlockDone) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.unlockErr, e.unlockCalled, e.nodes = d.Err, true, d.Votes.Nodes
		switch {
		case d.Err == nil && e.lost:
			// A quorum removed the key, but the lock had been lost or
			// had expired before (LockEnd told it, once): nothing held
			// was released.
		case d.Err == nil:
			e.say("released %s", keyText(d.Key))
		case errors.Is(d.Err, redlock.ErrUnavailable):
			// No quorum could answer: that proves no loss (withLock
			// does not call it one), whatever LockEnd said. withLock
			// prints the error itself, with or without -v.
			// The Client repeats the failed releases in the background
			// until it closes: withLock tells how that ended.
			e.say("releasing %s failed (%d of %d %s failed); repeating it until exit", keyText(d.Key), d.Votes.Failed, d.Votes.Nodes, plural.Nodes(d.Votes.Nodes))
		case e.lostAtUnlock != nil:
			e.sayLost(*e.lostAtUnlock)
		case !e.lost: // else LockEnd told already
			e.say("releasing %s found it no longer held by a quorum (%d of %d %s released it, %d needed): %v", keyText(d.Key), d.Votes.Granted, d.Votes.Nodes, plural.Nodes(d.Votes.Nodes), d.Votes.Quorum, d.Err)
		}
	}
}

// NodeCall hands each node call to what records or tells it: a failed call
// (nodeFailed, with --verbose), an acquisition's answer (acquireFailed,
// acquireAnswered), an extension's (extendAnswered), a refused INFO
// (identityRefused), and a subscription to the key's releases refused with
// an error retrying cannot fix (subscribeFailed, with --verbose, once a
// node: NOPERM, an ACL user without SSUBSCRIBE or the channel; a server
// without SSUBSCRIBE), for the wait then polls that node, which is slower,
// and nothing else would tell why. Once Unlock has begun, it records the
// nodes that answered a release (see released).
func (e *lockEvents) NodeCall(ctx context.Context, c redlock.NodeCall) {
	e.nodeFailed(c)
	switch c.Operation {
	case redlock.OpSubscribe:
		e.subscribeFailed(c)
		return
	case redlock.OpExtend:
		e.extendAnswered(c)
		return
	case redlock.OpAcquire:
		e.acquireFailed(c)
		e.acquireAnswered(ctx, c)
		return
	case redlock.OpIdentity:
		e.identityRefused(c)
		return
	}
	if c.Operation != redlock.OpRelease || c.Err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.unlocking {
		return
	}
	if e.released == nil {
		e.released = make(map[string]bool)
	}
	e.released[c.Node] = e.released[c.Node] || c.OK
}

// nodeFailed says, with --verbose, that a node failed a call of the lock
// (its acquisition, fencing token or extension), and why, at the call:
// once, until the node answers again (a release included), which it says
// too. The lock
// needs a quorum of the nodes, not every one, so a node that fails while the
// others make a quorum changes nothing the command reports otherwise: one
// node down of three went unseen even with -v, leaving the lock with no node
// to spare. Not told here: the calls that Do's end canceled, and the errors
// retrying cannot fix of an acquisition or an extension, which other lines
// tell (tellBroken, tellRefusedExtend, the loss's cause, the failed
// extension's line, the command's error).
func (e *lockEvents) nodeFailed(c redlock.NodeCall) {
	if !e.verbose {
		return
	}
	switch c.Operation {
	case redlock.OpAcquire, redlock.OpFence, redlock.OpExtend, redlock.OpRelease:
	default:
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case c.Err == nil:
		if e.failing[c.Node] {
			delete(e.failing, c.Node)
			delete(e.failedWith, c.Node)
			e.say("node %s answers again", c.Node)
		}
	case errors.Is(c.Err, context.Canceled):
	case c.Operation == redlock.OpRelease:
		// A release that fails on a quorum is told with its nodes'
		// errors; one that fails on fewer leaves a key there that
		// expires by itself within its TTL.
	case c.Operation != redlock.OpFence && driver.PermanentCode(c.Err) != "":
	case firstTime(&e.failing, c.Node):
		if e.failedWith == nil {
			e.failedWith = make(map[string]string)
		}
		e.failedWith[c.Node] = c.Err.Error()
		e.say("node %s failed to %s %s (a lock needs a quorum of the nodes, not every one): %s", c.Node, opVerb[c.Operation], keyText(c.Key), escapeUnprintable(c.Err.Error()))
	}
}

// opVerb says what a call of NodeCall.Operation does to the key, for
// nodeFailed.
var opVerb = map[string]string{
	redlock.OpAcquire: "acquire",
	redlock.OpFence:   "write the fencing token of",
	redlock.OpExtend:  "extend",
}

// extendAnswered records, for each node that said yes to an extension of
// the lock, when the key will expire there at the earliest (the extension's
// TTL from the moment the round of calls began), as acquireAnswered does for
// the nodes that granted it, and takes a node that says no before then for
// one that no longer holds the key although the lock runs on. Nothing but a
// fault removes the key there before it expires (eviction under maxmemory,
// a DEL or FLUSHALL, a restart without the data, a clock stepped forward):
// the lock holds while a quorum does, but on one node fewer than the
// operator counts on, silently otherwise. A no after that time proves
// nothing (the node may have missed extensions: down, slow), so it is not
// told. The next extension that succeeds tells them (see Extend);
// one that finds the lock lost tells the loss instead. It also keeps each
// node's error until the node answers again, for lossCause.
func (e *lockEvents) extendAnswered(c redlock.NodeCall) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case errors.Is(c.Err, context.Canceled):
		// Do is done with the lock and releases it: not the node's
		// doing.
	case c.Err != nil:
		if e.extendErrs == nil {
			e.extendErrs = make(map[string]error)
		}
		e.extendErrs[c.Node] = c.Err
		if driver.PermanentCode(c.Err) != "" {
			e.refusedExtend = append(e.refusedExtend, c)
		}
	default:
		delete(e.extendErrs, c.Node)
	}
	switch {
	case c.OK:
		e.holdsUntil(c.Node, now.Add(-c.Duration).Add(e.ttl))
	case c.Err == nil && !e.forgot[c.Node]:
		// Less a margin for the node's clock rate against this one's.
		expires, ok := e.holders[c.Node]
		if !ok || !now.Before(expires.Add(-e.ttl/20)) || !firstTime(&e.forgot, c.Node) {
			return
		}
		e.forgotten = append(e.forgotten, c.Node)
	}
}

// attemptSets are the nodes that set the key in one acquisition attempt,
// each with the earliest time the key expires there (the TTL from the
// moment the round of calls began); granted says that the attempt obtained
// the lock. The command's Attempt puts them in the attempt's context, which
// its node calls carry. e.mu guards them.
type attemptSets struct {
	yes     map[string]time.Time
	granted bool
}

// attemptSetsKey is the context key of an attempt's attemptSets.
type attemptSetsKey struct{}

// acquireAnswered records a node that set the key in an acquisition
// attempt: once the attempt obtained the lock (at its end, or now for a
// reply that came after the grant), the node holds the key, and a no to an
// extension before the key could expire there says that it lost it, as
// after a yes to an extension (see extendAnswered). Without it, a key lost
// before the lock's first extension (evicted, deleted, flushed) went
// untold for the lock's whole life, every extension of that node saying no.
// The nodes of an attempt that failed are forgotten with it: its keys were
// released.
func (e *lockEvents) acquireAnswered(ctx context.Context, c redlock.NodeCall) {
	sets, _ := ctx.Value(attemptSetsKey{}).(*attemptSets)
	if !c.OK || sets == nil {
		return
	}
	expires := time.Now().Add(-c.Duration).Add(e.ttl)
	e.mu.Lock()
	defer e.mu.Unlock()
	if sets.granted {
		e.holdsUntil(c.Node, expires)
		return
	}
	if sets.yes == nil {
		sets.yes = make(map[string]time.Time)
	}
	sets.yes[c.Node] = expires
}

// holdsUntil records that node holds the key until expires at the
// earliest, unless it was known to hold it longer. The caller holds e.mu.
func (e *lockEvents) holdsUntil(node string, expires time.Time) {
	if e.holders == nil {
		e.holders = make(map[string]time.Time)
	}
	if expires.After(e.holders[node]) {
		e.holders[node] = expires
	}
}

// acquireFailed records a node that answered an acquisition with an error
// retrying cannot fix (READONLY from a replica, NOPERM, OOM, a command
// renamed away, ...): it will refuse every lock. It is told once a lock is
// granted all the same, on the other nodes (by Attempt, or here for a reply
// that came after the grant); when none is, the command's error names
// every node's.
func (e *lockEvents) acquireFailed(c redlock.NodeCall) {
	if c.Err == nil || driver.PermanentCode(c.Err) == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !firstTime(&e.brokenTold, c.Node) {
		return
	}
	e.broken = append(e.broken, c)
	if !e.until.IsZero() {
		// The call returned after the grant: the Client does not wait
		// for a node once a quorum has decided.
		e.tellBroken()
	}
}

// identityRefused tells, once a node and even without --verbose, a node
// that refuses for good to tell which server it is (INFO, for an ACL user
// without +info): the Client takes it as distinct, so one server under two
// addresses would count twice towards the quorum, unseen.
func (e *lockEvents) identityRefused(c redlock.NodeCall) {
	// Only the question refused (NOPERM, INFO renamed away): a node that
	// fails every call for good (a wrong password) fails it too, and its
	// calls' errors say why.
	if !driver.CommandRefused(c.Err) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !firstTime(&e.anonymous, c.Node) {
		return
	}
	e.warn("node %s does not tell which server it is, so two addresses of one server would count twice towards the quorum, unseen (give the user +info; see redlock doctor): %v", c.Node, c.Err)
}

// grantedDespite forgets, untold, the refusals of the nodes that set the key
// in the attempt that obtained the lock (granted): an earlier attempt's
// error that retrying could not fix (OOM under maxmemory, say) was fixed,
// and such a node holds the lock with the others. The caller holds e.mu.
func (e *lockEvents) grantedDespite(granted map[string]time.Time) {
	e.broken = slices.DeleteFunc(e.broken, func(c redlock.NodeCall) bool {
		_, ok := granted[c.Node]
		if ok {
			delete(e.brokenTold, c.Node)
		}
		return ok
	})
}

// tellBroken tells, once a node and even without --verbose, the nodes that
// refused the acquisition of a lock granted on the others: a lock granted
// with a node that can never take part tolerates one failure fewer than
// the operator counts on. The caller holds e.mu.
func (e *lockEvents) tellBroken() {
	for _, c := range e.broken {
		e.warn("node %s refuses every lock with an error retrying cannot fix, so the lock on %s is held on the other nodes, with that node fewer to spare (see redlock doctor): %v", c.Node, keyText(c.Key), c.Err)
	}
	e.broken = nil
}

// tellRefusedExtend tells, once a node and even without --verbose, the
// nodes that refused an extension with an error retrying cannot fix
// (NOPERM: an ACL user without +pexpire; READONLY) while the others
// extended the lock: nodeFailed leaves those errors to the loss's cause or
// the failed extension's line, which an extension that succeeds on a quorum
// never prints, so such a node went unseen even with -v. It is told
// without -v as tellBroken tells a node that refused the acquisition: a
// configuration error that leaves the lock a node fewer to spare, which
// the operator must see in the unattended runs too. A node whose
// acquisition was refused so is told by tellBroken already. The caller
// holds e.mu.
func (e *lockEvents) tellRefusedExtend(key string) {
	for _, c := range e.refusedExtend {
		if e.brokenTold[c.Node] || !firstTime(&e.refusedExtendTold, c.Node) {
			continue
		}
		e.warn("node %s answered %s to the extension of %s, which retrying cannot fix, so the lock is held on the other nodes, with that node fewer to spare (see redlock doctor): %s", c.Node, driver.PermanentCode(c.Err), keyText(key), escapeUnprintable(c.Err.Error()))
	}
	e.refusedExtend = nil
}

// tellForgotten tells, once a node and even without --verbose, the nodes
// found no longer holding the lock while it runs on. The caller holds e.mu.
func (e *lockEvents) tellForgotten(key string) {
	for _, node := range e.forgotten {
		e.warn("node %s no longer holds %s, which it held: its key was evicted (maxmemory-policy), deleted or flushed, expired early (a clock stepped forward), or the node restarted without its data; the lock holds while a quorum of nodes does, with that node fewer to spare (see redlock doctor)", node, keyText(key))
	}
	e.forgotten = nil
}

// subscribeFailed tells, once a node, that a node refused a subscription
// to the key's releases for good.
func (e *lockEvents) subscribeFailed(c redlock.NodeCall) {
	if !e.verbose || c.Err == nil || driver.PermanentCode(c.Err) == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !firstTime(&e.refusedNotices, c.Node) {
		return
	}
	e.say("node %s refuses to tell when %s is released (the wait polls it instead, which is slower): %v", c.Node, keyText(c.Key), c.Err)
}

// releasedNodes returns how many nodes released the key since Unlock began
// and how many answered (those that no longer held it too), of how many.
func (e *lockEvents) releasedNodes() (released, answered, nodes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ok := range e.released {
		if ok {
			released++
		}
	}
	return released, len(e.released), e.nodes
}

// LockEnd records how a lost lock was found lost, and says (with --verbose)
// that it was.
func (e *lockEvents) LockEnd(_ context.Context, d redlock.LockEnd) {
	if !d.Lost() {
		return
	}
	e.mu.Lock()
	e.lost, e.endHow, e.endErr = true, d.How, d.Err
	if d.How == redlock.EndLostUnlock {
		// Also when nodes failed to answer rather than said the lock
		// was gone: Unlock's end, which comes next and has the votes,
		// tells which.
		e.lostAtUnlock = &d
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	e.sayLost(d)
}

// sayLost says that the lock was lost, and after how long. How it was
// found lost, and the nodes' errors, the command's line that tells the loss
// says next, with or without --verbose (see lossCause): said here too, -v
// printed the cause twice.
func (e *lockEvents) sayLost(d redlock.LockEnd) {
	e.say("lost %s after holding it for %v", keyText(d.Key), roundWait(d.Held))
}

// refusedByOwn is the reason to wait that -v tells of an attempt whose
// refusals may be by the command's own keys of earlier attempts
// (redlock.Votes.Own), beside the Outcomes, in lockEvents.told.
const refusedByOwn redlock.Outcome = "refused_by_own"

// lostHow says what a LockEnd.How of a lost lock means; err is the
// LockEnd's Err, whose votes (*redlock.VoteError) tell whether the nodes
// proved the key gone (more than Nodes-Needed said they no longer held it:
// no quorum can) or the call only could not confirm that a quorum still
// held it (some nodes failed to answer). Told "found it gone" for a release
// that one of three nodes failed and one refused (it never had the key),
// the user read a loss the nodes never reported.
func lostHow(how string, err error) string {
	found := map[string]string{
		redlock.EndLostExtend: "an extension",
		redlock.EndLostUnlock: "the release",
	}[how]
	var ve *redlock.VoteError
	if found != "" && errors.As(err, &ve) && ve.Refused <= ve.Nodes-ve.Needed {
		return fmt.Sprintf("%s could not confirm that a quorum of the nodes still held it (%d of %d %s agreed, %d needed; %d said they no longer held it, %d failed)", found, ve.Granted, ve.Nodes, plural.Nodes(ve.Nodes), ve.Needed, ve.Refused, ve.Failed)
	}
	if s := map[string]string{
		redlock.EndLostExtend: "an extension found it gone from too many nodes for a quorum",
		redlock.EndExpired:    "its validity ran out before an extension succeeded",
		redlock.EndLostUnlock: "the release found it gone from too many nodes for a quorum",
		redlock.EndRefused:    "an extension was refused by so many nodes with an error retrying cannot fix that no quorum could extend it, so it was given up at once",
	}[how]; s != "" {
		return s
	}
	return how
}

// lossCause returns, the first time it is called (once the lock was found
// lost), why: how it was found lost and the errors of the nodes whose latest
// extension failed, the nodes with one error together, those that retrying
// cannot fix first (NOPERM: an ACL user without +pexpire or the extension
// script's commands; READONLY: a node turned into a replica by a
// failover), each error on one line, with the servers' text escaped; ""
// when there is nothing to tell, or it was told. Without it, the command
// says only that the lock was lost: the cause was on stderr with --verbose
// only. The nodes are named as in NodeError, any password masked, and a
// driver's error does not carry the lock's value.
func (e *lockEvents) lossCause() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.causeTold {
		return ""
	}
	e.causeTold = true
	var parts []string
	if e.endHow != "" {
		parts = append(parts, lostHow(e.endHow, e.endErr))
	}
	type group struct {
		msg, code string
		nodes     []string
	}
	var groups []*group
	byMsg := map[string]*group{}
	for _, node := range slices.Sorted(maps.Keys(e.extendErrs)) {
		err := e.extendErrs[node]
		msg := escapeUnprintable(err.Error())
		g := byMsg[msg]
		if g == nil {
			g = &group{msg: msg, code: driver.PermanentCode(err)}
			byMsg[msg] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, node)
	}
	for _, permanent := range []bool{true, false} { // those retrying cannot fix first
		for _, g := range groups {
			nodes := strings.Join(g.nodes, ", ")
			switch {
			case permanent && g.code != "":
				parts = append(parts, fmt.Sprintf("the last extension on %s answered %s, which retrying cannot fix (see redlock doctor): %s", nodes, g.code, g.msg))
			case !permanent && g.code == "":
				parts = append(parts, fmt.Sprintf("the last extension on %s failed: %s", nodes, g.msg))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// extendCause returns why an extension failed, on one line: the errors
// joined in err but the sentinel (ErrLockLost, which an extension that is
// retried carries too) and the votes (told beside it), separated by "; ",
// each without "redlock: " and with the servers' text escaped; err's own
// text, escaped, when it joins nothing else. The joins are opened, nested
// ones too, down to the nodes' errors (*redlock.NodeError), each told whole:
// redlock joins an extension's errors with errors.Join, and a node's error
// may wrap several of its own (fmt.Errorf with several %w).
func extendCause(err error) string {
	var parts []string
	var walk func(err error)
	walk = func(err error) {
		switch e := err.(type) {
		case *redlock.VoteError:
		case *redlock.NodeError:
			parts = append(parts, escapeUnprintable(strings.TrimPrefix(e.Error(), "redlock: ")))
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
		default:
			if err != redlock.ErrLockLost {
				parts = append(parts, escapeUnprintable(strings.TrimPrefix(err.Error(), "redlock: ")))
			}
		}
	}
	walk(err)
	if len(parts) == 0 {
		return escapeUnprintable(err.Error())
	}
	return strings.Join(parts, "; ")
}

// roundWait rounds a duration for a message: to the microsecond below a
// millisecond, to the millisecond below ten seconds, else to the tenth of a
// second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond) // not "0s" for an acquisition at once
	}
	if d < 10*time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// firstTime records node in *seen, made when nil, and reports whether it was
// not there yet: what is told once a node is told the first time.
func firstTime(seen *map[string]bool, node string) bool {
	if (*seen)[node] {
		return false
	}
	if *seen == nil {
		*seen = make(map[string]bool)
	}
	(*seen)[node] = true
	return true
}
