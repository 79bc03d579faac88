package redlock

import (
	"math/rand/v2"
	"time"
)

// Backoff says how long Lock waits before its next attempt. attempt is 1 before
// the first retry, 2 before the second, and so on, counted from Lock's first
// attempt and again from each retry that Lock makes at once (below): the
// count starts again at 1 after such a retry. Lock waits at least 1ms,
// whatever the Backoff returns (zero or negative included). A Backoff must be
// safe for concurrent use.
//
// One retry does not wait: when the nodes publish releases (driver.Notifier),
// or when Lock had to wait for another waiter of its Client on the key, it
// tries again at once after subscribing to the releases or getting its turn,
// since the lock may have been released meanwhile, unheard; attempt 1 is then
// before the retry after that one. A waiter that gets its turn from one of its
// Client that got the lock, and takes over that waiter's subscriptions, which
// heard every release since (see Client.Lock), waits its Backoff (attempt 1)
// or the release's notice first. Lock also tries at once when it is woken (by
// a release published on a node, by a subscription confirmed after an attempt
// began, by the end of another attempt of its Client on the key: see
// Client.Lock), and the count starts again after each such retry. Over several
// nodes that publish releases this is common even when nobody releases the
// key: the subscriptions confirmed during the retry that follows subscribing
// wake Lock for one more, so that a Lock of six attempts on a key held
// throughout can give its Backoff 1, 1, 2, 3 rather than 1, 2, 3, 4.
type Backoff func(attempt int) time.Duration

// minBackoff is the shortest wait of Lock between attempts: a Backoff that
// returns less (zero, or a negative duration) gets this.
const minBackoff = time.Millisecond

// wait returns b's wait before attempt, at least minBackoff.
func (b Backoff) wait(attempt int) time.Duration { return max(b(attempt), minBackoff) }

// ExponentialBackoff waits about min before the first retry and doubles the wait
// with each attempt up to max (from min again when Lock's count of attempts
// starts again: see Backoff). Each wait is drawn at random from [w/2, w], so that
// clients competing for a key do not retry in lock-step.
//
// A min of zero or less starts from 1ms, the shortest wait of Lock; a min
// above max is capped at max.
func ExponentialBackoff(min, max time.Duration) Backoff {
	if min <= 0 {
		min = minBackoff
	}
	return func(attempt int) time.Duration {
		w := min
		for i := 1; i < attempt && w < max; i++ {
			if w > max/2 {
				w = max
				break
			}
			w *= 2
		}
		return jitter(w, max)
	}
}

// ConstantBackoff waits a random duration in [d/2, d] before every retry.
func ConstantBackoff(d time.Duration) Backoff {
	return func(int) time.Duration { return jitter(d, d) }
}

// jitter returns a random duration in [w/2, w], w first capped at max.
func jitter(w, max time.Duration) time.Duration {
	if w > max {
		w = max
	}
	if w <= 1 {
		return w
	}
	half := w / 2
	return half + rand.N(w-half+1)
}
