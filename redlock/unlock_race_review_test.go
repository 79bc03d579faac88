package redlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// TestReviewExtendAndTTLInFlightAtUnlock: an Extend, or a Lock.TTL, in flight
// when the holder's own Unlock runs fails with ErrLockLost and
// ErrAlreadyUnlocked, as one that starts after Unlock does. Before, the
// Extend, which a quorum of nodes had granted, said "no validity left:
// extending took 20ms of the 10s TTL" with almost all of the validity left,
// TTL said "no validity left: a quorum holds it for 9.9s", and WithLogger
// warned "redlock: extend failed" for a lock its holder had released (its
// Warn is for an Extend that failed while the lock was still held).
func TestReviewExtendAndTTLInFlightAtUnlock(t *testing.T) {
	for _, call := range []string{"Extend", "TTL"} {
		t.Run(call, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				var logs bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
				c, err := redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithLogger(logger))
				require.NoError(t, err)
				defer c.Close()
				ctx := context.Background()
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				for _, m := range mem {
					m.SetLatency(20 * time.Millisecond)
				}
				done := make(chan error)
				go func() {
					if call == "Extend" {
						done <- l.Extend(ctx, 10*time.Second)
						return
					}
					_, err := l.TTL(ctx)
					done <- err
				}()
				time.Sleep(5 * time.Millisecond) // its calls are on their way
				require.NoError(t, l.Unlock(ctx))
				err = <-done
				require.ErrorIs(t, err, redlock.ErrLockLost)
				require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked, "%s in flight at Unlock: %v", call, err)
				require.NotContains(t, err.Error(), "no validity left")
				require.Empty(t, logs.String(), "nothing to warn of: the holder released the lock")
			})
		})
	}
}
