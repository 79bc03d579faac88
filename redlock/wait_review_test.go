package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Regression tests for the defects a review of Lock's wait found.

// A Lock (or Do) capped by WithMaxAttempts gives up after its attempts, as
// its documentation says, even while another waiter of its Client for the
// key, without a cap, waits for as long as the key is held: the cap bounds
// the wait, whatever the other waiters of the Client do.
func TestLockCapBoundsWaitBehindAnotherWaiter(t *testing.T) {
	for _, call := range []string{"Lock", "Do"} {
		t.Run(call, func(t *testing.T) { capBoundsWaitBehindAnotherWaiter(t, call) })
	}
}

func capBoundsWaitBehindAnotherWaiter(t *testing.T, call string) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		holder := newClient(t, nodes)
		c := newClient(t, nodes)
		// Held for an hour: extended by Do until the test ends.
		held := make(chan struct{})
		release := make(chan struct{})
		go holder.Do(t.Context(), "k", func(context.Context) error {
			close(held)
			<-release
			return nil
		})
		defer close(release)
		<-held

		// An uncapped waiter takes the Client's turn for the key.
		uncapped, cancel := context.WithCancel(t.Context())
		defer cancel()
		go c.Lock(uncapped, "k")
		time.Sleep(time.Second)

		capped := make(chan error, 1)
		start := time.Now()
		go func() {
			opts := []redlock.Option{redlock.WithMaxAttempts(3), redlock.WithBackoff(redlock.ConstantBackoff(10 * time.Millisecond))}
			if call == "Do" {
				capped <- c.Do(context.Background(), "k", func(context.Context) error { return nil }, opts...)
				return
			}
			_, err := c.Lock(context.Background(), "k", opts...)
			capped <- err
		}()
		select {
		case err := <-capped:
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorContains(t, err, "gave up after 3 attempts")
		case <-time.After(time.Minute):
			t.Fatalf("%s with WithMaxAttempts(3) and a 10ms backoff still waits %v later, behind another waiter of its Client", call, time.Since(start))
		}
	})
}
