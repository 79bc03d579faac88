package redlock

import (
	"context"
	"sync"
)

// A watcher holds a waiter's subscriptions to the releases of one key, on
// every node that publishes them (driver.Notifier).
type watcher struct {
	released chan struct{} // receives when any node publishes a release

	mu      sync.Mutex
	closed  bool
	cancels []func()
}

// watch subscribes to the releases of key on every Notifier node at once and
// returns when one subscription is confirmed, or when all have failed or ctx
// ended: a release published on any node wakes the waiter, since releases go
// to every node. Subscriptions confirmed later are kept too; a stalled node is
// never waited for beyond the first confirmation. Polling remains the fallback.
func (c *Client) watch(ctx context.Context, key string) *watcher {
	w := &watcher{released: make(chan struct{}, 1)}
	results := make(chan bool, len(c.nodes))
	started := 0
	for i, nn := range c.notifiers {
		if nn == nil {
			continue
		}
		// Not once Close has begun: a waiter that got its turn as Close
		// began would otherwise subscribe after Close returned.
		if c.backgroundUnlessClosed(func() {
			sctx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
			stop, err := c.subscribe(sctx, i, nn, key, w.released)
			cancel()
			if err == nil && !w.keep(stop) {
				stop()
			}
			results <- err == nil
		}) {
			started++
		}
	}
	for range started {
		if <-results {
			break
		}
	}
	return w
}

// keep records a confirmed subscription's cancel, unless the watcher is
// already closed.
func (w *watcher) keep(stop func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.cancels = append(w.cancels, stop)
	return true
}

// close cancels every subscription, including those confirmed later.
func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	cancels := w.cancels
	w.cancels = nil
	w.mu.Unlock()
	for _, stop := range cancels {
		stop()
	}
}
