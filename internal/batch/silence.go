package batch

import "time"

// silence measures how long a server has answered nothing while it was asked:
// since its last answer, or since the first send after that answer when the
// server had nothing in flight in between. A Batcher and a Gate fail their
// queue when a send times out and the server has been silent for more than
// twice the network timeout. Counted from the last answer alone (or from the
// zero time, before any), the first send that timed out on a server never
// used, or idle for long, failed the whole queue behind it: at a Client's
// first use, a first connection made too late on a loaded machine failed
// every command queued on that server.
type silence struct {
	answered time.Time // when the server last answered
	asked    time.Time // when the first send after that answer began
}

// sending records that a send begins now.
func (s *silence) sending() {
	if !s.asked.After(s.answered) {
		s.asked = time.Now()
	}
}

// answer records an answer at now.
func (s *silence) answer(now time.Time) { s.answered = now }

// longer reports whether at now the server has been silent for longer than
// d: asked, and no answer since.
func (s *silence) longer(now time.Time, d time.Duration) bool {
	since := s.answered
	if s.asked.After(since) {
		since = s.asked
	}
	return !since.IsZero() && now.Sub(since) > d
}
