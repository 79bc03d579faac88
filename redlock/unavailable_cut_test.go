package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Lock's error, when its context ends, is the verdict of its last attempt
// that finished (ErrUnavailable's doc: "For Lock and Do, it is the verdict
// of the last attempt that finished"; the README's exit code 69: "for
// --wait past 0, the verdict of the last attempt that finished"). Of five
// nodes, two hold the key for another, one is down and two are stalled:
// every attempt that finishes fails with three of five failed
// (ErrUnavailable), once it has waited for the stalled nodes' timeouts
// (waitVerdict). A context that ends while an attempt waits so cut that
// attempt short, and its partial votes ("2 refused, 1 failed") became the
// verdict: ErrNotObtained without ErrUnavailable, as if the key were merely
// held elsewhere (redlock run --wait 1s exits 75, not 69).
func TestLockUnavailableVerdictCutInWait(t *testing.T) {
	const nodeTimeout = time.Second
	for _, m := range []struct {
		name    string
		acquire func(ctx context.Context, c *redlock.Client) error
	}{
		{"Lock", func(ctx context.Context, c *redlock.Client) error {
			_, err := c.Lock(ctx, "k")
			return err
		}},
		{"Do", func(ctx context.Context, c *redlock.Client) error {
			return c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") })
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rc := newRefusalCluster(t, "held", "down", "held", "stalled", "stalled")
				c := newClient(t, rc.nodes, redlock.WithNodeTimeout(nodeTimeout))
				// The first attempt finishes at 1s (ErrUnavailable); the
				// second, after a Backoff well under a second, waits for
				// the stalled nodes when the context ends.
				ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout*3/2)
				defer cancel()
				err := m.acquire(ctx, c)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorIs(t, err, redlock.ErrUnavailable, "%v", err)
			})
		})
	}
}
