package redlock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// quietNode hides a node's optional interfaces (driver.Notifier among
// them): a node of a driver that publishes no releases.
type quietNode struct{ driver.Node }

// Over nodes that publish no releases, a lone waiter has nothing to have
// missed after its first attempt: no subscription, no turn waited for. It
// waits its Backoff before the first retry, as Backoff says ("attempt is 1
// before the first retry"), rather than trying again at once: with
// WithMaxAttempts(2), Lock spans one Backoff wait.
func TestBackoffBeforeFirstRetryWithoutNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = quietNode{m}
		}
		c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
		held, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		start := time.Now()
		_, err = c.Lock(t.Context(), "k", redlock.WithMaxAttempts(2))
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.GreaterOrEqual(t, time.Since(start), 30*time.Second,
			"Lock(WithMaxAttempts(2)) with ConstantBackoff(1m) made its second attempt without waiting (synctest's clock): want a wait in [30s, 1m] between the attempts")
		require.NoError(t, held.Unlock(t.Context()))
	})
}
