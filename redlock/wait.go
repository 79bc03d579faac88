package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/internal/attemptcap"
)

// maxWakeJitter caps the random delay of a waiter woken by a release.
const maxWakeJitter = 5 * time.Millisecond

// wakeWindow is the span of the random delay that a contended waiter waits
// after a release's notice, and after a split vote, given its last
// attempt's duration: four attempts, at most maxWakeJitter. Wide enough that
// the woken waiters of several Clients rarely send their SETs at the same
// time (each overlap can split the vote and waste every contender's
// attempt); the first of them, which most often wins, still waits a small
// part of it. bench/RESULTS.md has the A/B that chose four over two.
func wakeWindow(took time.Duration) time.Duration {
	return min(4*took, maxWakeJitter)
}

// Lock acquires the lock named key, retrying until it holds the lock, ctx
// ends, or the attempts reach WithMaxAttempts's cap. Give ctx a deadline, or
// a cap, to bound the wait: without either, Lock waits as long as the key is
// held. When ctx ends first, the error matches ErrNotObtained and ctx.Err();
// after the last allowed attempt, it matches ErrNotObtained. Either way it is
// the error of the last attempt that finished (not cut short by ctx), with
// its votes (*VoteError): it matches ErrUnavailable when too many nodes
// failed in that attempt for a quorum.
//
// Lock stops at once, without waiting for ctx, when more than
// len(nodes)-Quorum nodes answered errors that retrying cannot fix
// (driver.PermanentCode: authentication, ACL permission, wrong type, out of
// memory, read-only replica, a database or a command the server does not
// have, a Redis Cluster's redirection to a node given as one server; and
// ErrClosed: a node closed, or the client under it, such as a
// client or pool closed by its user under a node of a driver's New); the
// error names the cause, with each node's error (a *NodeError). An attempt
// is decided as soon as a quorum is out of reach: one that failed with such
// an error among its replies waits for the replies still out (for up to
// twice the node timeout; each call is bounded by one from the attempt's
// start, a call to a node that queues by the timer), when they could make
// such errors more than len(nodes)-Quorum, so that a node that is down and
// fails at once does not decide it before the other refusals come (three
// nodes, one down, two refusing: Lock stops at its first attempt); an
// attempt that saw no such error waits for nothing more. Nodes that are down or time out, errors
// retrying may fix, are retried however many they are (two refusing and
// three down of five: Lock retries). It stops too when
// Close begins while it waits between attempts: the error then matches
// ErrClosed, with the last attempt's error joined in (and ctx.Err() when
// ctx has ended too).
//
// opts apply to this call only: WithTTL, WithBackoff and WithMaxAttempts.
//
// How it waits, after a first attempt failed:
//   - Waiters for one key in one Client take turns: only one of them competes
//     over the network at a time, so they never split the nodes' votes among
//     themselves. A waiter with a cap (WithMaxAttempts) still makes its
//     attempts, on its Backoff, while it waits for its turn, so that the cap
//     bounds its wait.
//   - When the nodes publish releases (driver.Notifier, as the Redis drivers
//     do), the competing waiter subscribes to the key's releases on every node
//     (or takes over those of the waiter of its Client that had the turn
//     before it; when that waiter got the lock and they listened on
//     len(nodes)-Quorum+1 nodes or more then, every release since that
//     waiter's grant was heard, and the new waiter tries when woken or when
//     its Backoff says, not at once)
//     and retries as soon as the first of them announces that the holder
//     unlocked (or, when another attempt of its Client on the key is then
//     in flight, as soon as that attempt has ended). It tries once its
//     first subscription is confirmed; a subscription confirmed after an
//     attempt began (by the monotonic clock) wakes it for one more attempt
//     when that one failed, however many are confirmed during it, since a
//     release may have been published there meanwhile, unheard. When an attempt so
//     woken lost to a split vote (some nodes granted it, too few for a
//     quorum: waiters of other Clients voted at the same time), the waiter retries after a random delay of at most four times
//     its last attempt's duration (and at most 5ms) rather than the
//     Backoff's, and for a second the wakes of this Client's waiters for the
//     key wait such a delay too, so that waiters of several Clients woken by
//     one release do not keep voting at once. A waiter alone, and any waiter
//     with one node, where no vote can split, attempts at once.
//   - An attempt that fails leaves its own key, until its release in the
//     background is answered, on the nodes whose SET failed or answered
//     after the verdict (a reply slower than the node timeout, say): such
//     releases publish nothing (they would wake every waiter to collide
//     again), and the waiter's next attempt is refused there as if another
//     held the lock; such a refusal does not decide that attempt's verdict
//     before the other nodes have answered (within the node timeout, as
//     any call), so that nodes that are down still make it ErrUnavailable,
//     and a quorum granted by the others still gets the lock. When with
//     those nodes a quorum may grant it (those
//     that granted the failed attempt, those whose outcome it does not
//     know, and those that refused it while its own earlier key was still
//     there), the waiter tries again as soon as all its keys' releases are
//     answered, as when woken by a release, rather than after its Backoff:
//     once until the next release notice wakes it.
//   - A waiter that tries at once (woken, or given the turn when a release
//     may have come unheard) and finds another attempt of its Client on
//     the key in flight tries again as soon as that attempt has ended, as
//     woken by a release, also when the nodes publish nothing.
//   - Otherwise, and as the fallback for locks that expire rather than being
//     released, it retries after the Backoff's delays, each at least 1ms.
//   - A subscription that failed (a first pub/sub connection slower than
//     the node timeout, say) is made again in the background, a second
//     later, then at doubling gaps up to 30s (each wait a random time
//     between half the gap and the gap, so that waiters whose
//     subscriptions failed together do not all ask again at once), while the waiter listens on
//     fewer than len(nodes)-Quorum+1 nodes: a release is published only
//     where it deleted the key, and every set of nodes that frees a quorum
//     meets that many. Once made, it wakes the waiter for one attempt,
//     since a release may have come there meanwhile; so too when every
//     subscription failed. A node that refused the subscription with an
//     error retrying cannot fix (driver.PermanentCode: NOPERM for an ACL
//     user without SSUBSCRIBE or the channel) is not asked again in this
//     wait, which polls it.
func (c *Client) Lock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	switch {
	case c.unmade():
		return nil, badInput(ctx, errUnmade)
	case ctx == nil:
		return nil, errNilContext
	}
	cc, err := c.callOptions("Lock", lockOptions, opts)
	if err != nil {
		if cc.bad = badInput(ctx, err); c.obs == nil {
			return nil, cc.bad
		}
	}
	return c.observedLock(ctx, key, cc)
}

// attempts runs Lock's attempts and keeps its verdict.
type attempts struct {
	c        *Client
	key      string
	cc       callConfig
	made     int
	verdict  error // the error of the last attempt that finished
	admitted bool  // the next attempt has a slot already (see tryLock)
	// clearWake says that the last attempt failed and that a quorum may
	// grant the next once the waiter's own leftover keys are released
	// (see mayWin).
	clearWake bool
}

// try makes one attempt. It returns stop=true with the lock, or with the error
// to return, when Lock must not try again.
func (a *attempts) try(ctx context.Context) (l *Lock, stop bool, err error) {
	a.made++
	admitted := a.admitted
	a.admitted = false
	cc := a.cc
	cc.waits = true
	l, o, err := a.c.attempt(ctx, a.key, cc, a.made, admitted)
	a.clearWake = o.clearWake
	if a.cc.left == nil {
		a.cc.left = o.left // made by this Lock's first failed attempt
	}
	if o.finished || a.verdict == nil {
		a.verdict = err
	}
	switch {
	case err == nil:
		return l, true, nil
	case !errors.Is(err, ErrNotObtained): // bad input, closed Client
		if a.made > 1 && errors.Is(err, ErrClosed) {
			// Close began after this waiter's wait ended and before
			// the attempt: as when it begins during the wait (see
			// closed), the last attempt's error joined in.
			return nil, true, a.closed(ctx)
		}
		return nil, true, err
	case ctx.Err() != nil:
		return nil, true, a.ended(ctx)
	case o.permanent:
		return nil, true, err
	case a.cc.maxAttempts > 0 && a.made >= a.cc.maxAttempts:
		return nil, true, errors.Join(err, &attemptcap.Error{Made: a.made})
	}
	return nil, false, err
}

// ended is the error of Lock when ctx ended: the verdict of the last attempt
// that finished, and ctx.Err().
func (a *attempts) ended(ctx context.Context) error { return ended(ctx, a.verdict) }

// lock runs Lock's attempts, counted in a.
func (c *Client) lock(ctx context.Context, a *attempts) (*Lock, error) {
	l, stop, err := a.try(ctx)
	if stop {
		return l, err
	}
	return c.lockWait(ctx, a)
}

// lockWait is lock after a first attempt that failed and may be tried again
// (its verdict in a): it waits for the key and tries until it gets it. Why
// it tries, each time, is a wake (see wakeSources).
func (c *Client) lockWait(ctx context.Context, a *attempts) (*Lock, error) {
	// The releases of this waiter's own keys that its failed attempts
	// leave to the background publish nothing: left tells it when they are
	// done.
	if a.cc.left == nil { // the failed attempt left none: it sent no SET
		a.cc.left = newLeftovers(len(c.nodes))
	}
	src := &wakeSources{left: a.cc.left}
	key, cc := a.key, a.cc
	var (
		l    *Lock
		stop bool
	)
	t, waited, done, l, err := c.takeTurn(ctx, a)
	if t == nil {
		return l, err
	}
	defer done()

	listening := false // on enough nodes since before this waiter's turn
	if c.notify {
		c.turnsMu.Lock()
		src.w, t.w = t.w, nil
		listening = src.w != nil && t.wHeard
		c.turnsMu.Unlock()
		if src.w == nil {
			src.w = c.watch(ctx, c.prefix+key)
		} else {
			src.w.adopt(ctx)
		}
		// Before done: the waiter that takes the turn next finds w.
		defer func() { c.handOver(t, src.w, l != nil) }()
		src.released, src.late = src.w.released, src.w.late
	}
	// Try again at once when the lock may have been released unheard:
	// while this waiter waited for its turn, or subscribed to the releases.
	// A waiter that did neither (nodes that publish nothing, no other
	// waiter), or that took over subscriptions that heard every release
	// meanwhile (see handOver), missed nothing: it waits its Backoff first,
	// or the notice that came.
	why := byBackoff
	var timer *time.Timer // made for the first wait
	wait := func(d time.Duration) {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
	}
	if (src.released != nil || waited) && !listening {
		why = byUnheard
	} else {
		wait(cc.backoff.wait(1))
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var took time.Duration
	for n := 1; ; { // n: the attempts since Lock's first or the last wake, for the Backoff
		if why == byBackoff {
			if why, err = src.next(ctx, c, a, timer.C); err != nil {
				return nil, err
			}
		}
		src.spend(why)
		if why != byBackoff {
			n = 0
		}
		n++
		if why.woken() {
			if c.obs != nil {
				c.obs.Wake(ctx, Wake{Key: key, Attempt: a.made + 1})
			}
			if j := wakeWindow(took); t.contended() && j > 0 {
				wait(rand.N(j))
				select {
				case <-timer.C:
				case <-ctx.Done():
					return nil, a.ended(ctx)
				case <-c.closing:
					return nil, a.closed(ctx)
				}
			}
		}
		src.begin()
		if l, stop, err = a.try(ctx); stop {
			return l, err
		}
		took = time.Since(src.start)
		switch {
		case why != byBackoff && errors.Is(err, errAcquiring):
			// Refused before it reached the nodes: the attempt of this
			// Client in flight may have been refused before the release
			// that this one was for, which then holds for the waiter.
			if err := c.rewake(ctx, a); err != nil {
				return nil, err
			}
			why = byRelease
		case why.woken() && len(c.nodes) > 1 && splitVote(err):
			// Every contender lost and released its votes, and no
			// release will be announced: retry soon, at a random moment
			// within wakeWindow, before the others. Back to the
			// shortest poll if that one is lost too.
			t.splitAt.Store(time.Now().UnixNano())
			wait(rand.N(max(wakeWindow(took), time.Microsecond)))
			why = byBackoff
		default:
			wait(cc.backoff.wait(n))
			why = byBackoff
		}
	}
}

// heard drops the release notice waiting on released, if any, as an attempt
// begins: whatever it announces (a release on some node, a subscription made
// again there) happened before the attempt's SET reaches that node, which
// the attempt therefore covers. Kept, it would wake the waiter again once
// its attempt was refused, for a release that attempt had seen: one node's
// notice may come while the waiter waits its random delay after another's
// (see Lock), and each node of a release publishes one.
func heard(released chan struct{}) {
	select {
	case <-released:
	default:
	}
}

// handOver leaves w, the subscriptions of a waiter that had the turn for the
// key, to the waiter that takes the turn next, if any waits for it; otherwise
// it closes w. The next waiter then neither subscribes (a round trip before
// its first attempt, and a subscription and an unsubscription sent to each
// node) nor, when w listened on enough nodes as the key was granted, tries
// at once: every release since was heard. A waiter that got the lock drops the
// notice waiting in w, if any: it came before the grant, from the release
// that the grant followed (a quorum held this waiter's key meanwhile, and
// the clean-up of a failed attempt publishes nothing). A waiter that left
// without the lock (its context ended, Close, a panic) may have spent a
// release's notice on an attempt that never finished, which released its
// votes without publishing: the next waiter tries at once, as one that
// subscribed itself does.
func (c *Client) handOver(t *turn, w *watcher, granted bool) {
	// Counted now, before the grant is returned and the lock can be
	// released: a subscription confirmed later (one that answered within
	// the node timeout, but after the first; see watch) may have missed
	// that release.
	all := granted && w.listens() >= len(c.nodes)-c.quorum+1
	if granted {
		heard(w.released)
		heard(w.late)
	}
	w.adopt(nil) // the next waiter's values once it takes w (see adopt)
	c.turnsMu.Lock()
	if t.waiters > 1 {
		t.w, t.wHeard = w, all
		w = nil
	}
	c.turnsMu.Unlock()
	if w != nil {
		w.close()
	}
}

// rewake waits until the attempt of its Client on a.key that was in flight
// when a waiter tried has ended: the waiter tries again then, as woken by a
// release (see lockWait), rather than at its next poll. It returns Lock's
// error when ctx ends or Close begins first.
func (c *Client) rewake(ctx context.Context, a *attempts) error {
	select {
	case <-c.acquireEnded(a.key):
		return nil
	case <-ctx.Done():
		return a.ended(ctx)
	case <-c.closing:
		return a.closed(ctx)
	}
}

// splitVote reports whether a failed attempt lost to a split vote: some
// nodes granted it, too few for a quorum. An attempt whose fencing token
// was not written did not: a quorum granted it, and the votes in its error
// are the write's (see tryLock).
func splitVote(err error) bool {
	var ve *VoteError
	return errors.As(err, &ve) && ve.Granted > 0 && ve.Granted < ve.Needed && !errors.Is(err, ErrFenceNotWritten)
}

// closed is the error of Lock when Close began while it waited: the
// verdict of the last attempt that finished, ErrClosed, and ctx.Err() when
// ctx has ended too (its end and Close's beginning may wake the wait at
// once, and the wait picks either).
func (a *attempts) closed(ctx context.Context) error {
	return ended(ctx, errors.Join(a.verdict, ErrClosed))
}

// ended joins ctx.Err() to err when ctx has ended and err does not say so
// yet: an attempt may have failed just before its context ended.
func ended(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		return errors.Join(err, cerr)
	}
	return err
}

// A turn is the right to compete for one key over the network among the
// waiters of one Client.
type turn struct {
	sem     chan struct{} // holds a token while a waiter has the turn
	waiters int           // guarded by Client.turnsMu
	// w is the subscriptions that the waiter which had the turn left to
	// the next (see handOver), until it takes them; guarded by
	// Client.turnsMu. The last waiter to leave closes them.
	w *watcher
	// wHeard says that w hears every release since the waiter which left
	// it got the lock: it listened on enough nodes then (see handOver).
	// Guarded by Client.turnsMu.
	wHeard bool
	// splitAt is when a woken attempt of this Client on the key last lost
	// to a split vote (UnixNano; 0: never): until splitMemory later, its
	// waiters' wakes wait a random delay.
	splitAt atomic.Int64
}

// splitMemory is how long a split vote on a key makes a Client's waiters
// for it wait a random delay at their wakes: waiters of several Clients
// compete for it.
const splitMemory = time.Second

// contended reports whether a woken attempt of this Client on the key lost
// to a split vote within splitMemory.
func (t *turn) contended() bool {
	at := t.splitAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < splitMemory
}

// takeTurn waits until no other waiter of this Client competes for a.key,
// or ctx ends, after a failed attempt. done passes the turn on. A waiter with
// a cap (WithMaxAttempts) makes its attempts on its Backoff while it waits, so
// that the cap bounds its wait whatever the waiter that has the turn waits
// for. Without the turn (t nil), it returns what Lock returns: the lock such
// an attempt obtained, or the error of the attempt that stopped Lock, or, as
// Lock's other exits, the verdict of the last attempt that finished joined
// with ctx's error or ErrClosed. waited says that another waiter had the
// turn when this one asked for it.
func (c *Client) takeTurn(ctx context.Context, a *attempts) (_ *turn, waited bool, done func(), _ *Lock, _ error) {
	key := a.key
	c.turnsMu.Lock()
	if c.turns == nil {
		c.turns = make(map[string]*turn)
	}
	t := c.turns[key]
	if t == nil {
		t = &turn{sem: make(chan struct{}, 1)}
		c.turns[key] = t
	}
	t.waiters++
	c.turnsMu.Unlock()
	leave := func() {
		var w *watcher
		c.turnsMu.Lock()
		if t.waiters--; t.waiters == 0 {
			delete(c.turns, key)
			w, t.w = t.w, nil
		}
		c.turnsMu.Unlock()
		if w != nil { // left to a waiter that gave up before its turn
			w.close()
		}
	}
	taken := false
	defer func() {
		if !taken { // also when a Backoff or an observer panics
			leave()
		}
	}()
	pass := func() func() { // passes the turn on, once
		taken = true
		var once sync.Once
		return func() { once.Do(func() { <-t.sem; leave() }) }
	}
	select {
	case t.sem <- struct{}{}: // no other waiter has it
		return t, false, pass(), nil, nil
	default:
	}
	var (
		timer *time.Timer
		poll  <-chan time.Time // nil without a cap
	)
	if a.cc.maxAttempts > 0 {
		timer = time.NewTimer(a.cc.backoff.wait(1))
		defer timer.Stop()
		poll = timer.C
	}
	for attempt := 2; ; attempt++ {
		select {
		case t.sem <- struct{}{}:
			return t, true, pass(), nil, nil
		case <-poll:
		case <-ctx.Done():
			return nil, true, nil, nil, a.ended(ctx)
		case <-c.closing:
			return nil, true, nil, nil, a.closed(ctx)
		}
		if l, stop, err := a.try(ctx); stop {
			return nil, true, nil, l, err
		}
		timer.Reset(a.cc.backoff.wait(attempt))
	}
}
