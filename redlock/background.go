package redlock

import (
	"context"
	"sync/atomic"
	"time"
)

// A tracker counts a Client's node calls and background work in flight, so
// that Close can wait for them.
type tracker struct {
	n       atomic.Int64
	closing atomic.Bool
	idle    chan struct{} // buffered: signalled when n drops to 0 while closing
}

func newTracker() *tracker { return &tracker{idle: make(chan struct{}, 1)} }

func (t *tracker) add(n int) { t.n.Add(int64(n)) }

func (t *tracker) done() {
	if t.n.Add(-1) == 0 && t.closing.Load() {
		select {
		case t.idle <- struct{}{}:
		default:
		}
	}
}

// wait waits until nothing is in flight, or d passed. It reports whether
// nothing is.
func (t *tracker) wait(d time.Duration) bool {
	t.closing.Store(true)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for t.n.Load() != 0 {
		select {
		case <-t.idle:
		case <-timer.C:
			return t.n.Load() == 0
		}
	}
	return true
}

// background runs f on a goroutine of its own that Close waits for.
func (c *Client) background(f func()) {
	c.inflight.add(1)
	go func() {
		defer c.inflight.done()
		f()
	}()
}

// settle releases key on node i after a SET (or Extend) whose outcome may be
// that the key is set there, and repeats the release until the node has
// answered need releases in a row. One answer settles a SET that the node
// answered itself. A SET whose outcome is unknown (it failed, or timed out on
// a stalled node) may still wait in the node's socket, behind or ahead of a
// release sent on another connection; it needs two: a release answered after
// an earlier one was answered follows whatever the node had queued before
// it. The releases are bounded by the node timeout each, spaced by at least
// the node timeout; the first is always sent, and the repeats end at
// deadline (a TTL after the outcome became unknown, or later when the lock
// was extended) or at Close, whichever comes first.
// first, when not nil, receives once the first release returned.
func (c *Client) settle(bg context.Context, i int, key, value string, need int, deadline time.Time, first chan<- struct{}) {
	defer func() {
		if first != nil {
			first <- struct{}{}
		}
	}()
	answered := 0
	for try := 0; c.quit.Err() == nil; try++ {
		timeout := c.nodeTimeout
		if try > 0 {
			left := deadline.Sub(c.now())
			if left <= 0 {
				return
			}
			timeout = min(timeout, left)
		}
		rctx, cancel := context.WithTimeout(bg, timeout)
		stop := context.AfterFunc(c.quit, cancel)
		began := time.Now()
		// No publish: waking waiters for a failed attempt's partial keys
		// would only make them collide again.
		_, err := c.nodes[i].EvalRelease(rctx, key, value)
		stop()
		cancel()
		if first != nil {
			first <- struct{}{}
			first = nil
		}
		if err == nil {
			if answered++; answered >= need {
				return
			}
			continue
		}
		answered = 0
		if pause := c.nodeTimeout - time.Since(began); pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.quit.Done():
			}
			t.Stop()
		}
	}
}
