package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Close while Do's fn runs: nothing extends the lock any more, so fn's
// context must be canceled with ErrLockLost at the latest when the lock's
// validity ends (Do's doc), not left running past it as if it still held
// the lock.
func TestReviewCloseCancelsRunningDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		const ttl = time.Second
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		require.NoError(t, err)
		holding := make(chan struct{})
		result := make(chan error, 1)
		var cause error
		go func() {
			result <- c.Do(t.Context(), "k", func(ctx context.Context) error {
				close(holding)
				select {
				case <-ctx.Done():
					cause = context.Cause(ctx)
					return ctx.Err()
				case <-time.After(3 * ttl):
					return errors.New("fn's context was not canceled within 3 TTLs of Close: fn ran on without the lock")
				}
			})
		}()
		<-holding
		require.NoError(t, c.Close())
		err = <-result
		require.NotContains(t, err.Error(), "not canceled", "Do after Close: %v", err)
		require.ErrorIs(t, cause, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrLockLost)
	})
}

// Do and Close at once: Close reads the keeper while the first Do makes it
// (run with -race).
func TestReviewCloseRacesFirstDo(t *testing.T) {
	for range 20 {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(time.Second))
		require.NoError(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				_ = c.Do(context.Background(), "k", func(context.Context) error { return nil })
			})
		}
		wg.Go(func() {
			<-start
			time.Sleep(50 * time.Microsecond)
			_ = c.Close()
		})
		close(start)
		wg.Wait()
	}
}
