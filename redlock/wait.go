package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// maxWakeJitter caps the random delay of a waiter woken by a release.
const maxWakeJitter = 5 * time.Millisecond

// Lock acquires the lock named key, retrying until it holds the lock or ctx
// ends. Give ctx a deadline to bound the wait. When ctx ends first, the error
// matches ErrNotObtained and ctx.Err().
//
// How it waits, after a first attempt failed:
//   - Waiters for one key in one Client take turns: only one of them competes
//     over the network at a time, so they never split the nodes' votes among
//     themselves.
//   - When the nodes publish releases (driver.Notifier, as the Redis drivers
//     do), the competing waiter subscribes to the key's releases on every node
//     and retries as soon as the holder unlocks, after a random delay of at
//     most twice its last attempt's duration (and at most 5ms), so that
//     waiters of several Clients woken by one release do not all vote at once.
//   - Otherwise, and as the fallback for locks that expire rather than being
//     released, it retries after the Backoff's delays, each at least 1ms.
func (c *Client) Lock(ctx context.Context, key string) (*Lock, error) {
	l, err := c.TryLock(ctx, key)
	if !retryable(ctx, err) {
		return l, ended(ctx, err)
	}
	done, terr := c.takeTurn(ctx, key)
	if terr != nil {
		return nil, errors.Join(err, terr)
	}
	defer done()

	var released <-chan struct{}
	if c.notify {
		w := c.watch(ctx, c.prefix+key)
		defer w.close()
		released = w.released
	}
	// Try again at once: the lock may have been released while this waiter
	// waited for its turn or subscribed, unheard.
	start := time.Now()
	if l, err = c.TryLock(ctx, key); !retryable(ctx, err) {
		return l, ended(ctx, err)
	}
	took := time.Since(start)
	timer := time.NewTimer(c.backoff.wait(1))
	defer timer.Stop()
	for attempt := 2; ; attempt++ {
		select {
		case <-timer.C:
		case <-released:
			// Woken by a release: back to the shortest poll if this
			// attempt is lost to a split vote, which no release follows.
			attempt = 1
			if j := min(2*took, maxWakeJitter); j > 0 {
				timer.Reset(rand.N(j))
				select {
				case <-timer.C:
				case <-ctx.Done():
					return nil, errors.Join(err, ctx.Err())
				}
			}
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		}
		start = time.Now()
		if l, err = c.TryLock(ctx, key); !retryable(ctx, err) {
			return l, ended(ctx, err)
		}
		took = time.Since(start)
		timer.Reset(c.backoff.wait(attempt))
	}
}

// ended joins ctx.Err() to err when ctx has ended and err does not say so
// yet: an attempt may have failed just before its context ended.
func ended(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		return errors.Join(err, cerr)
	}
	return err
}

// retryable reports whether a failed TryLock is worth another attempt.
func retryable(ctx context.Context, err error) bool {
	return err != nil && errors.Is(err, ErrNotObtained) && ctx.Err() == nil
}

// A turn is the right to compete for one key over the network among the
// waiters of one Client.
type turn struct {
	sem     chan struct{} // holds a token while a waiter has the turn
	waiters int           // guarded by Client.turnsMu
}

// takeTurn waits until no other waiter of this Client competes for key, or
// ctx ends. done passes the turn on.
func (c *Client) takeTurn(ctx context.Context, key string) (done func(), err error) {
	c.turnsMu.Lock()
	if c.turns == nil {
		c.turns = make(map[string]*turn)
	}
	t := c.turns[key]
	if t == nil {
		t = &turn{sem: make(chan struct{}, 1)}
		c.turns[key] = t
	}
	t.waiters++
	c.turnsMu.Unlock()
	leave := func() {
		c.turnsMu.Lock()
		if t.waiters--; t.waiters == 0 {
			delete(c.turns, key)
		}
		c.turnsMu.Unlock()
	}
	select {
	case t.sem <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-t.sem; leave() }) }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
