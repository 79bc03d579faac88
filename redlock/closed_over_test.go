package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// After Close, Extend and TTL return an error matching ErrClosed (and
// ErrLockLost) also when the lock is over or was unlocked: Extend's doc
// says so after Close whatever else, and Close's says that calls on a
// closed Client return ErrClosed. Before, the over and unlocked branches
// came first and left ErrClosed out.
func TestCallsAfterCloseOnEndedLockMatchErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		const ttl = time.Second
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		require.NoError(t, err)
		ctx := context.Background()
		expired, err := c.TryLock(ctx, "expired")
		require.NoError(t, err)
		unlocked, err := c.TryLock(ctx, "unlocked")
		require.NoError(t, err)
		require.NoError(t, unlocked.Unlock(ctx))
		require.NoError(t, c.Close())
		time.Sleep(2 * ttl) // expired's validity is over
		for name, l := range map[string]*redlock.Lock{"expired": expired, "unlocked": unlocked} {
			err := l.Extend(ctx, ttl)
			assert.ErrorIs(t, err, redlock.ErrLockLost, "%s: Extend after Close", name)
			assert.ErrorIs(t, err, redlock.ErrClosed, "%s: Extend after Close", name)
			_, err = l.TTL(ctx)
			assert.ErrorIs(t, err, redlock.ErrLockLost, "%s: TTL after Close", name)
			assert.ErrorIs(t, err, redlock.ErrClosed, "%s: TTL after Close", name)
		}
		assert.ErrorIs(t, unlocked.Extend(ctx, ttl), redlock.ErrAlreadyUnlocked, "unlocked: still says why")
	})
}
