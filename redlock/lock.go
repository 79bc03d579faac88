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
	c     *Client
	key   string
	value string // the random value that proves ownership; never shown

	mu    sync.Mutex
	until time.Time
}

// Key returns the name of the lock.
func (l *Lock) Key() string { return l.key }

// Until returns the local deadline of the lock's validity: the holder may act
// as the only owner until then, under Redlock's timing assumptions. It is
// measured on the monotonic clock from the start of the acquisition (or of the
// last Extend) and already discounts the clock-drift allowance.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Extend sets the lock's time to live on the nodes to ttl, only where they still
// hold it. It succeeds when a quorum extended it with validity left, and
// moves Until. Otherwise it returns an error matching ErrLockLost, with the
// per-node causes joined in, and Until is unchanged.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	c := l.c
	if ttl <= 0 {
		return fmt.Errorf("redlock: Extend TTL %v is not positive", ttl)
	}
	d := drift(ttl, c.driftFactor)
	if ttl <= d {
		return fmt.Errorf("redlock: Extend TTL %v is too small: the drift allowance alone is %v", ttl, d)
	}
	start := c.now()
	r := c.start(ctx, func(ctx context.Context, n driver.Node) (bool, error) {
		return n.Extend(ctx, l.key, l.value, ttl)
	})
	ok := r.wait(ctx)
	until := start.Add(ttl - d)
	if ok && c.now().Before(until) {
		l.mu.Lock()
		l.until = until
		l.mu.Unlock()
		return nil
	}
	err := r.err(ctx, ErrLockLost)
	if ok {
		err = errors.Join(err, fmt.Errorf("no validity left: extending took %v of the %v TTL", c.now().Sub(start), ttl))
	}
	return err
}

// Unlock releases the lock on every node. It returns once a quorum confirmed
// the release (the other nodes are released in the background, each bounded by
// the node timeout), or an error matching ErrLockLost when fewer than a quorum
// still held the lock, with the per-node causes joined in.
func (l *Lock) Unlock(ctx context.Context) error {
	r := l.c.start(ctx, func(ctx context.Context, n driver.Node) (bool, error) {
		return n.EvalRelease(ctx, l.key, l.value)
	})
	if r.wait(ctx) {
		return nil
	}
	return r.err(ctx, ErrLockLost)
}
