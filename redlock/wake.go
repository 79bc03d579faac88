package redlock

import (
	"context"
	"time"
)

// A wake is why a waiting Lock makes its next attempt (see lockWait).
type wake int

const (
	// byBackoff: its Backoff's delay ran out, or the random delay of a
	// retry after a split vote. Not a wake: nothing says that the lock may
	// be free.
	byBackoff wake = iota
	// byUnheard: its first attempt once it has the turn, when a release may
	// have come unheard while it waited for the turn or subscribed. Not
	// observed as a wake, nor delayed under contention.
	byUnheard
	// byRelease: a node published a release (or a subscription was made
	// again there, see subscribeOne), or an attempt of this Client on the
	// key that was in flight when the waiter tried has ended (see rewake).
	byRelease
	// byLate: a subscription was confirmed after the waiter's last attempt
	// began (see watcher.late).
	byLate
	// byCleared: the releases of the keys its failed attempts left on some
	// nodes have ended, and with those nodes a quorum may grant it (see
	// mayWin).
	byCleared
)

// woken reports whether the waiter tries as after a release: observed
// (Observer.Wake), after a random delay while its Client's attempts on the
// key lose to split votes (see turn.contended), and again soon when it
// loses to one itself.
func (w wake) woken() bool { return w >= byRelease }

// wakeSources are the channels that may wake a waiting Lock before its
// Backoff says, and each one's budget:
//   - released: each notice that comes while the waiter waits wakes it;
//     those that come before an attempt begins are dropped by it (see
//     heard), which covers them.
//   - late: one wake per attempt however many subscriptions are confirmed
//     late, and only for one confirmed after that attempt began (see
//     watcher.confirmedAfter): at most len(nodes)-1 a wait.
//   - cleared: only after an attempt that a quorum may grant once the
//     waiter's leftovers are released (attempts.clearWake), and once per
//     release notice (clearSpent).
//
// next is the one place where the waiter learns whether and why it tries
// before its Backoff; spend charges the budgets.
type wakeSources struct {
	released, late chan struct{} // nil without notifications
	w              *watcher      // nil without notifications
	left           *leftovers
	// clearSpent says that the waiter was woken by the end of its
	// leftovers since the last release notice: once is enough. An attempt
	// refused on a quorum held elsewhere, but for a node that fails its
	// SETs and answers their releases (which mayWin counts as one that may
	// grant it), would otherwise be woken again as soon as that release
	// was answered, and again, with nothing changed: an attempt every few
	// node calls while the holder keeps the lock, not on the Backoff.
	clearSpent bool
	start      time.Time // when the last attempt began
}

// next waits for the waiter's next attempt: until its timer fires
// (byBackoff) or a source wakes it, and returns why; cleared counts only
// after an attempt with a.clearWake. It returns Lock's error when ctx ends
// or Close begins first.
func (s *wakeSources) next(ctx context.Context, c *Client, a *attempts, timer <-chan time.Time) (wake, error) {
	var cleared chan struct{} // nil: not woken by the clean-up
	if a.clearWake && !s.clearSpent {
		cleared = s.left.cleared
	}
	for {
		select {
		case <-timer:
			return byBackoff, nil
		case <-s.released:
			return byRelease, nil
		case <-s.late:
			// A release may have come unheard where a subscription was
			// confirmed after the last attempt's SET; not before it.
			if s.w.confirmedAfter(s.start) {
				return byLate, nil
			}
		case <-cleared:
			return byCleared, nil
		case <-ctx.Done():
			return byBackoff, a.ended(ctx)
		case <-c.closing:
			return byBackoff, a.closed(ctx)
		}
	}
}

// spend charges why's budget: a release's notice gives the end of the
// leftovers its one wake back, and that wake spends it. A late
// confirmation is not a release's notice: clearSpent stays.
func (s *wakeSources) spend(why wake) {
	switch why {
	case byRelease:
		s.clearSpent = false
	case byCleared:
		s.clearSpent = true
	}
}

// begin drops the notices waiting as an attempt begins, which it covers (see
// heard), and notes when it began.
func (s *wakeSources) begin() {
	heard(s.released)
	heard(s.late)
	heard(s.left.cleared)
	s.start = time.Now()
}
