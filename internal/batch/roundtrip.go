package batch

import "time"

// Settings of the scaling by round trip (see Gate and Batcher).
const (
	// MinSamples is how many answers a node times before it scales by
	// their fastest: the first few may have waited for a dial, a handshake
	// or a scheduler busy with a storm of calls.
	MinSamples = 32
	// FarRoundTrip is the fastest answer from which a node scales: below
	// it, a command's time is mostly the client's and the server's, not the
	// network's, and the fixed limit is what bounds it.
	FarRoundTrip = 2 * time.Millisecond
)

// roundTrip learns a server's round trip from the times of its answers: the
// fastest of them, which only goes down, so that answers slowed by load
// (queued in the client, or behind a busy scheduler) never raise it.
type roundTrip struct {
	fastest time.Duration // 0 before the first answer
	samples int
}

// learn records an answer that took d (none if d ≤ 0) and returns the scale
// by which to multiply a fixed limit: 1 until MinSamples answers were timed
// or while the fastest is under FarRoundTrip, and otherwise the fastest in
// milliseconds, rounded up, at most most.
func (r *roundTrip) learn(d time.Duration, most int) int {
	if d > 0 {
		r.samples++
		if r.fastest == 0 || d < r.fastest {
			r.fastest = d
		}
	}
	if r.samples < MinSamples || r.fastest < FarRoundTrip {
		return 1
	}
	return int(min((r.fastest+time.Millisecond-1)/time.Millisecond, time.Duration(most)))
}
