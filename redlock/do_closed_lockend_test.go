package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A Close while Do's function runs ends the lock EndClosed, whose LockEnd.Err
// is ErrClosed; Do's error is ErrLockLost itself, without ErrClosed, as Do's
// doc, README and EndClosed's doc say, and as LockEnd.Err's doc says now.
// Before, LockEnd.Err's doc said that a lock of Do's lost while its function
// ran, Close included, had its LockEnd.Err in Do's error too.
func TestDoClosedHasLockEndErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		ends := &lockEnds{}
		c := newClient(t, nodes, redlock.WithTTL(30*time.Second), redlock.WithObserver(ends))
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			require.NoError(t, c.Close())
			<-ctx.Done()
			return nil
		})
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.EqualError(t, err, redlock.ErrLockLost.Error(), "Do's error for EndClosed is ErrLockLost itself (Do's doc)")
		require.Same(t, redlock.ErrLockLost, err, "fn returned nil: Do's error is the sentinel, not a join of it (README)")
		e := ends.only(t)
		require.Equal(t, redlock.EndClosed, e.How)
		require.Equal(t, redlock.ErrClosed, e.Err, "EndClosed's LockEnd.Err")
		require.NotErrorIs(t, err, e.Err, "LockEnd.Err's doc: for EndClosed, Do's error has ErrLockLost itself, not ErrClosed")
	})
}
