package redlock_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// An Extend of a held lock with a TTL out of range (zero, negative, no
// longer than the drift allowance, above MaxTTL) is bad input: its error is
// the caller's, returned to it, and the lock is as held as before.
// WithLogger warned "redlock: extend failed" for it, as for an Extend that
// failed on the nodes while the lock was held (validity_left the whole TTL).
// It is logged at Debug, as every Extend is, with a message that says the
// TTL was refused.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestLoggerExtendBadTTLIsNoWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{
		{"zero", 0},
		{"negative", -time.Second},
		{"within_drift", time.Millisecond},
		{"above_max", redlock.MaxTTL + time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var info, debug syncbuf.Buffer
				_, nodes := memNodes(3)
				c := newClient(t, nodes, redlock.WithTTL(time.Minute),
					redlock.WithLogger(slog.New(slog.NewTextHandler(&info, nil))),
					redlock.WithLogger(slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))))
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				err = l.Extend(t.Context(), tc.ttl)
				require.Error(t, err)
				require.NotErrorIs(t, err, redlock.ErrLockLost, "bad input is not a loss")
				assert.Empty(t, info.String(), "records at Info and above")
				assert.Contains(t, debug.String(), `level=DEBUG msg="redlock: extend refused: bad TTL" key=k`)
				assert.False(t, strings.Contains(debug.String(), "WARN"), "no warning:\n%s", debug.String())
				require.NoError(t, l.Unlock(t.Context()), "the lock was still held")
			})
		})
	}
}
