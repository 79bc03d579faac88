package batch

import (
	"sync/atomic"
	"time"
)

// Settings of the scaling by round trip (see Gate and Batcher).
const (
	// MinSamples is how many round trips one after the other (each command
	// sent after the last counted one was answered) a node times before it
	// scales by their fastest: answers that came together, from commands
	// that waited behind the same busy scheduler or queue, count once.
	MinSamples = 8
	// FarRoundTrip is the fastest answer from which a node scales: below
	// it, a command's time is mostly the client's and the server's, not the
	// network's, and the fixed limit is what bounds it.
	FarRoundTrip = 2 * time.Millisecond
)

// roundTrip learns a server's round trip from the times of its answers: the
// fastest of them, which only goes down, so that answers slowed by load
// (queued in the client, or behind a busy scheduler) never raise it. It is
// kept for the node's life, across reconnections. near is set once the scale
// is 1 for good, so that callers outside the lock can skip learning.
type roundTrip struct {
	fastest time.Duration // 0 before the first answer
	samples int           // round trips one after the other
	last    time.Time     // when the last counted one was answered
	near    atomic.Bool   // MinSamples counted and the fastest under FarRoundTrip
}

// learn records an answer at now to a command sent at sent (none if sent is
// zero) and returns the scale by which to multiply a fixed limit: 1 until
// MinSamples round trips one after the other were timed, or while the
// fastest answer is under FarRoundTrip, and otherwise the fastest in
// milliseconds, rounded up, at most most.
func (r *roundTrip) learn(sent, now time.Time, most int) int {
	if d := now.Sub(sent); !sent.IsZero() && d > 0 {
		if r.fastest == 0 || d < r.fastest {
			r.fastest = d
		}
		if sent.After(r.last) {
			r.samples++
			r.last = now
		}
	}
	if r.samples < MinSamples {
		return 1
	}
	if r.fastest < FarRoundTrip {
		r.near.Store(true)
		return 1
	}
	return int(min((r.fastest+time.Millisecond-1)/time.Millisecond, time.Duration(most)))
}

// start returns the time now, to time a command sent now, or zero once the
// server is known to be near: nothing is learned from it then, and a call
// saves the clock read.
func (r *roundTrip) start() time.Time {
	if r.near.Load() {
		return time.Time{}
	}
	return time.Now()
}
