package redlock

import (
	"context"
	"sync"
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

// background runs f on a goroutine of its own that Close waits for: while
// it works (c.inflight), and until it ends (c.running).
func (c *Client) background(f func()) {
	c.inflight.add(1)
	c.running.add(1)
	go func() {
		defer c.running.done()
		defer c.inflight.done()
		f()
	}()
}

// backgroundUnlessClosed is background unless Close has begun, in which case
// it runs nothing and returns false: Close waits for what started before it
// began, and nothing starts after. Work that others wait for (a channel it
// sends on) must use background, which always runs f.
func (c *Client) backgroundUnlessClosed(f func()) bool {
	c.inflight.add(1)
	c.running.add(1)
	// Close sets closed before it reads the counts: either it sees these
	// additions and waits for f, or this sees closed.
	if c.closed.Load() {
		c.running.done()
		c.inflight.done()
		return false
	}
	go func() {
		defer c.running.done()
		defer c.inflight.done()
		f()
	}()
	return true
}

// settle releases key on node i after a SET (or Extend) whose outcome may be
// that the key is set there, and has the release repeated until the node has
// answered need releases in a row. One answer settles a SET that the node
// answered itself. A SET whose outcome is unknown (it failed, or timed out on
// a stalled node) may still wait in the node's socket, behind or ahead of a
// release sent on another connection; it needs two: a release answered after
// an earlier one was answered follows whatever the node had queued before
// it. The first release is always sent; the repeats go through the node's
// cleaner (see clean), and end at deadline (a TTL after the outcome became
// unknown, or later when the lock was extended: see Unlock) or at Close,
// whichever comes first. first, when not nil, receives once the first release
// returned. left, when not nil, counts the release from before first
// receives (or settle returns, without first) until it is done: answered
// need times in a row, expired, or ended by Close (see leftovers).
func (c *Client) settle(bg context.Context, i int, key, value string, need int, deadline time.Time, first chan<- struct{}, left *leftovers) {
	e := &pendingRelease{bg: bg, key: key, value: value, need: need, deadline: deadline}
	if first != nil {
		err := c.releaseOnce(i, e)
		if err == nil {
			if e.answered++; e.answered >= e.need {
				first <- struct{}{}
				return
			}
		}
		if left != nil {
			e.left = left
			left.add(i)
		}
		first <- struct{}{}
	} else if left != nil {
		e.left = left
		left.add(i)
	}
	cl := &c.cleaners[i]
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if c.quit.Err() != nil {
		e.end(i)
		return
	}
	cl.pending = append(cl.pending, e)
	if !cl.running {
		cl.running = true
		c.background(func() { c.clean(i) })
	}
}

// A pendingRelease is a release that settle repeats.
type pendingRelease struct {
	bg         context.Context
	key, value string
	need       int
	answered   int // answers in a row
	tries      int
	deadline   time.Time
	left       *leftovers // counts it until it ends, when not nil
}

// end says that e's release on node i is done with: answered, expired or
// ended by Close.
func (e *pendingRelease) end(i int) {
	if e.left != nil {
		e.left.done(i)
	}
}

// A cleaner holds the releases pending on one node.
type cleaner struct {
	mu      sync.Mutex
	pending []*pendingRelease
	running bool // a clean goroutine works on pending
}

// releaseOnce sends e's release to node i, bounded by the node timeout (and
// after the first try by e's deadline) and by Close.
func (c *Client) releaseOnce(i int, e *pendingRelease) error {
	timeout := c.nodeTimeout
	if e.tries > 0 {
		timeout = min(timeout, e.deadline.Sub(c.now()))
	}
	e.tries++
	rctx, cancel := context.WithTimeout(e.bg, timeout)
	stop := context.AfterFunc(c.quit, cancel)
	defer cancel()
	defer stop()
	// No publish: waking waiters for a failed attempt's partial keys would
	// only make them collide again.
	_, err := c.observedRelease(rctx, i, e.key, e.value)
	return err
}

// clean repeats the releases pending on node i in rounds, one goroutine per
// node however many keys wait: while the node does not answer, a round sends
// one release (the others wait for the next), and rounds are spaced by the
// node timeout; once it answers, every pending release is sent in the round,
// and the next round follows at once. It ends when nothing is pending, or at
// Close.
func (c *Client) clean(i int) {
	cl := &c.cleaners[i]
	for {
		cl.mu.Lock()
		if len(cl.pending) == 0 || c.quit.Err() != nil {
			ended := cl.pending
			cl.pending, cl.running = nil, false
			cl.mu.Unlock()
			for _, e := range ended {
				e.end(i)
			}
			return
		}
		batch := cl.pending
		cl.pending = nil
		cl.mu.Unlock()

		began := time.Now()
		keep := batch[:0]
		failed := false
		for k, e := range batch {
			if failed {
				keep = append(keep, batch[k:]...) // the node does not answer: next round
				break
			}
			if e.tries > 0 && !c.now().Before(e.deadline) {
				e.end(i)
				continue // its keys have expired
			}
			if err := c.releaseOnce(i, e); err != nil {
				e.answered, failed = 0, true
			} else if e.answered++; e.answered >= e.need {
				e.end(i)
				continue
			}
			keep = append(keep, e)
		}
		cl.mu.Lock()
		cl.pending = append(keep, cl.pending...)
		cl.mu.Unlock()

		if pause := c.nodeTimeout - time.Since(began); failed && pause > 0 {
			// Nothing in flight meanwhile: Close need not wait for it.
			c.inflight.done()
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-c.quit.Done():
			}
			t.Stop()
			c.inflight.add(1)
		}
	}
}
