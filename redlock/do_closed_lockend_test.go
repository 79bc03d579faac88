package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// LockEnd.Err's doc says that a lock of Do's lost while its function ran
// has its LockEnd.Err in Do's error too. A Close while fn runs ends the lock
// EndClosed, whose Err is ErrClosed: Do's error must then have ErrClosed.
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
		e := ends.only(t)
		require.Equal(t, redlock.EndClosed, e.How)
		require.ErrorIs(t, err, e.Err, "a lock of Do's lost while its function ran has its LockEnd.Err in Do's error (LockEnd.Err's doc): Do returned %q, LockEnd.Err %q", err, e.Err)
	})
}
