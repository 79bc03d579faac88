package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// An Extend whose context had ended says so in its error whatever else
// ended it: the lock already over (its validity passed, or unlocked) or the
// Client closed. Before, over a lock already over, its error had no
// ctx.Err(). It runs in a bubble (testing/synctest): with a 50 ms TTL on the
// real clock a loaded machine timed out the TryLock's round (a CI run at
// 0056099: "context deadline exceeded" from two memory nodes).
func TestExtendEndedContextOnEndedLock(t *testing.T) {
	for name, end := range map[string]func(*testing.T, *redlock.Client, *redlock.Lock){
		"unlocked": func(t *testing.T, _ *redlock.Client, l *redlock.Lock) { require.NoError(t, l.Unlock(t.Context())) },
		"expired":  func(*testing.T, *redlock.Client, *redlock.Lock) { time.Sleep(60 * time.Millisecond) },
		"closed":   func(t *testing.T, c *redlock.Client, _ *redlock.Lock) { require.NoError(t, c.Close()) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(50*time.Millisecond))
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				end(t, c, l)
				canceled, cancel := context.WithCancel(t.Context())
				cancel()
				err = l.Extend(canceled, time.Second)
				require.ErrorIs(t, err, redlock.ErrLockLost)
				require.ErrorIs(t, err, context.Canceled)
			})
		})
	}
}

// An Extend after Close sends nothing, and leaves Until where it was: it
// fails with ErrClosed. Before, a shorter TTL than the lock had left lowered
// Until though nothing could be sent.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestExtendAfterCloseKeepsUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Hour))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, c.Close())
		until := l.Until()
		err = l.Extend(t.Context(), time.Second)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrClosed)
		require.Equal(t, until, l.Until(), "an Extend after Close moved Until")
	})
}
