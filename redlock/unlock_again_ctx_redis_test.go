package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestRedisUnlockAgainJoinsEndedContext: an Unlock after an earlier one
// answers ErrAlreadyUnlocked at once, and, when its context has ended, with
// ctx.Err() joined in, as every other call does (Extend and TTL after Unlock
// among them, which say ErrAlreadyUnlocked too). With a live context it is
// the sentinel itself. Found in an outside review (R3): the second Unlock
// returned the bare sentinel whatever its context said.
func TestRedisUnlockAgainJoinsEndedContext(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c := openRedis(t, name, servers, redlock.WithNodeTimeout(liveNodeTimeout))
			l, err := c.TryLock(t.Context(), "again-"+name)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			// A quorum confirmed it; the last node's release may still
			// be on its way.
			require.Eventually(t, func() bool { return keysLeft(t, servers, "again-"+name) == 0 }, 5*time.Second, 10*time.Millisecond)

			ended, cancel := context.WithCancel(t.Context())
			cancel()
			err = l.Unlock(ended)
			require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked)
			require.ErrorIs(t, err, context.Canceled, "Unlock(ended ctx) after Unlock: %v", err)
			// The other calls after Unlock say the same.
			require.ErrorIs(t, l.Extend(ended, redlock.DefaultTTL), context.Canceled)
			_, err = l.TTL(ended)
			require.ErrorIs(t, err, context.Canceled)

			require.Equal(t, redlock.ErrAlreadyUnlocked, l.Unlock(t.Context()), "a live context: the sentinel itself")
		})
	}
}
