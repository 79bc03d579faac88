package redlock

import (
	"math/rand/v2"
	"time"
)

// Backoff says how long Lock waits before its next attempt. attempt is 1 before
// the first retry, 2 before the second, and so on. Lock waits at least 1ms,
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
// or the release's notice first.
type Backoff func(attempt int) time.Duration

// minBackoff is the shortest wait of Lock between attempts: a Backoff that
// returns less (zero, or a negative duration) gets this.
const minBackoff = time.Millisecond

// wait returns b's wait before attempt, at least minBackoff.
func (b Backoff) wait(attempt int) time.Duration { return max(b(attempt), minBackoff) }

// ExponentialBackoff waits about min before the first retry and doubles the wait
// with each attempt up to max. Each wait is drawn at random from [w/2, w], so that
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
