package redlock_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// An Extend of a lock already found lost (by Lock.TTL, or by an earlier
// Extend), with validity left on its clock, sends nothing and fails: the
// lock is over, not still held, and "redlock: lock lost" has been logged at
// Warn already. WithLogger warned "redlock: extend failed" (validity_left
// about 5s) for it too, against its doc (Warn: an Extend that failed while
// the lock was still held), as it did before 9a92102 for an Extend after
// Unlock. It is logged at Debug.
func TestLoggerExtendAfterLossIsNoWarning(t *testing.T) {
	for _, how := range []string{"lost_ttl", "lost_extend"} {
		t.Run(how, func(t *testing.T) {
			var out syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&out, nil)) // Info
			mems := []*memory.Node{memory.New(), memory.New(), memory.New()}
			// liveNodeTimeout: with the default 200ms, on the real
			// clock, the TryLock failed on a loaded machine.
			c, err := redlock.New([]driver.Node{mems[0], mems[1], mems[2]}, redlock.WithLogger(logger), redlock.WithTTL(time.Minute),
				redlock.WithNodeTimeout(liveNodeTimeout))
			require.NoError(t, err)
			defer c.Close()
			ctx := t.Context()
			l, err := c.TryLock(ctx, "k")
			require.NoError(t, err)
			for _, m := range mems {
				m.Delete("k")
			}
			if how == "lost_ttl" {
				_, err = l.TTL(ctx)
			} else {
				err = l.Extend(ctx, time.Minute)
			}
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.Contains(t, out.String(), `level=WARN msg="redlock: lock lost" key=k how=`+how)
			require.True(t, time.Now().Before(l.Until()), "validity left on the lock's clock")

			require.ErrorIs(t, l.Extend(ctx, time.Minute), redlock.ErrLockLost)
			assert.Equal(t, 1, strings.Count(out.String(), "\n"), "only the loss is a warning:\n%s", out.String())
		})
	}
}
