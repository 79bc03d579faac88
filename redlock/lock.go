package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Lock is a lock held on a quorum of nodes. Its methods are safe for
// concurrent use.
type Lock struct {
	c       *Client
	name    string    // the key as the caller gave it
	key     string    // the key on the nodes: the Client's prefix and name
	value   string    // the random value that proves ownership; never shown
	token   uint64    // fencing token; 0 without WithFencing
	granted time.Time // when it was granted, for the observers

	mu    sync.Mutex
	acq   *round // the acquisition, whose late SETs Unlock must follow; nil once taken
	until time.Time
	ended bool          // no longer known to be held: expired, lost or unlocked
	done  chan struct{} // made by the first Done call; closed when ended
	timer *time.Timer   // closes done at until, while done exists
}

// Key returns the name of the lock, as given to TryLock or Lock (without the
// Client's key prefix).
func (l *Lock) Key() string { return l.name }

// Token returns the lock's fencing token, or 0 when the Client was made
// without WithFencing. Tokens of one key rise with every grant, across clients
// and drivers, as long as the nodes keep their counters (see WithFencing).
// Pass the token to the protected resource with every write, and have it
// reject a token lower than the highest it has seen: that stops a holder who
// paused past its validity, which no lock can.
func (l *Lock) Token() uint64 { return l.token }

// Until returns the local deadline of the lock's validity: the holder may act
// as the only owner until then, under Redlock's timing assumptions. It is
// measured on the monotonic clock from the start of the acquisition (or of the
// last Extend) and already discounts the clock-drift allowance.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock is no longer known to be
// held: its validity (Until) passed without a successful Extend, an Extend
// found it lost, or Unlock ran. It costs nothing until called: the first call
// arms a timer, and no goroutine waits on the lock's behalf.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.ended {
			close(l.done)
		} else {
			l.timer = time.AfterFunc(l.until.Sub(l.c.now()), l.expire)
		}
	}
	return l.done
}

// expire runs when the timer fires at Until.
func (l *Lock) expire() {
	l.mu.Lock()
	if left := l.until.Sub(l.c.now()); left > 0 && !l.ended {
		l.timer.Reset(left) // extended while the timer fired
		l.mu.Unlock()
		return
	}
	ended := l.endLocked()
	l.mu.Unlock()
	if ended && l.c.obs != nil {
		l.c.obs.LockEnd(context.Background(), l.endEvent(EndExpired))
	}
}

// endLocked marks the lock as no longer held and closes Done, and reports
// whether this call ended it. l.mu is held.
func (l *Lock) endLocked() bool {
	if l.ended {
		return false
	}
	l.ended = true
	if l.done != nil {
		l.timer.Stop()
		close(l.done)
	}
	return true
}

func (l *Lock) end() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endLocked()
}

// Extend sets the lock's time to live on the nodes to ttl, only where they still
// hold it. It succeeds when a quorum extended it with validity left, and
// moves Until. Otherwise it returns an error matching ErrLockLost, with the
// per-node causes joined in, and Until is unchanged; when so many nodes said
// they no longer hold it that no quorum can, Done is closed too.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	return l.observedExtend(ctx, ttl)
}

// extend is Extend, which also returns its round (nil for bad input) and
// whether it ended the lock, found lost, for the observers.
func (l *Lock) extend(ctx context.Context, ttl time.Duration) (*round, bool, error) {
	c := l.c
	if ttl <= 0 {
		return nil, false, fmt.Errorf("redlock: Extend TTL %v is not positive", ttl)
	}
	d := drift(ttl, c.driftFactor)
	if ttl <= d {
		return nil, false, fmt.Errorf("redlock: Extend TTL %v is too small: the drift allowance alone is %v", ttl, d)
	}
	if ttl > MaxTTL {
		return nil, false, fmt.Errorf("redlock: Extend TTL %v is longer than %v", ttl, MaxTTL)
	}
	start := c.now()
	r := c.start(ctx, OpExtend, l.name, func(ctx context.Context, _ int, n driver.Node) (bool, error) {
		return n.Extend(ctx, l.key, l.value, ttl)
	})
	ok := r.wait(ctx)
	until := start.Add(ttl - d)
	if ok && c.now().Before(until) {
		l.mu.Lock()
		if !l.ended {
			l.until = until
			if l.timer != nil {
				l.timer.Reset(until.Sub(c.now()))
			}
		}
		l.mu.Unlock()
		return r, false, nil
	}
	lostNow := r.lost() && l.end()
	err := r.err(ctx, ErrLockLost)
	if ok {
		err = errors.Join(err, fmt.Errorf("no validity left: extending took %v of the %v TTL", c.now().Sub(start), ttl))
	}
	return r, lostNow, err
}

// Unlock releases the lock on every node and closes Done. It returns once a
// quorum confirmed the release (the other nodes are released in the
// background, each bounded by the node timeout), or an error matching
// ErrLockLost when fewer than a quorum still held the lock, with the per-node
// causes joined in.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.observedUnlock(ctx)
}

// unlock is Unlock, which also returns its round and whether it ended the
// lock, for the observers.
func (l *Lock) unlock(ctx context.Context) (*round, bool, error) {
	l.mu.Lock()
	ended := l.endLocked()
	acq := l.acq
	l.acq = nil
	l.mu.Unlock()
	late := l.followLateSets(ctx, acq)
	r := l.c.start(ctx, OpRelease, l.name, func(ctx context.Context, i int, _ driver.Node) (bool, error) {
		if late && acq.state[i] == pending {
			return false, nil // released once its SET has answered
		}
		return l.c.release(ctx, i, l.key, l.value)
	})
	if r.wait(ctx) {
		return r, ended, nil
	}
	return r, ended, r.err(ctx, ErrLockLost)
}

// followLateSets handles the SETs of the acquisition that had not answered
// when TryLock returned. Released now, such a node could apply the SET after
// the release and keep the key for a whole TTL, so it is released once its
// SET answers, in the background, bounded by the node timeout. It returns
// whether any node is left to that: those still pending in acq, whose state
// no longer changes.
func (l *Lock) followLateSets(ctx context.Context, acq *round) bool {
	if acq == nil {
		return false
	}
	for acq.pendingCount() > 0 {
		select {
		case rep := <-acq.replies:
			acq.record(rep)
			continue
		default:
		}
		break
	}
	n := acq.pendingCount()
	if n == 0 {
		return false
	}
	c, bg := l.c, context.WithoutCancel(ctx)
	go func() {
		for range n {
			rep := <-acq.replies
			if rep.err != nil || rep.ok {
				rctx, cancel := context.WithTimeout(bg, c.nodeTimeout)
				c.observedRelease(rctx, rep.node, l.name, l.key, l.value)
				cancel()
			}
		}
	}()
	return true
}
