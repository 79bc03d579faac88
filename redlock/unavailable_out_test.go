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

// ErrUnavailable means that too many nodes failed for a quorum to be
// possible even had every other node agreed (more than N − quorum). A round
// decides as soon as a quorum is out of reach, and with the key held
// elsewhere on the nodes that answer first, their refusals beside one
// node's failure decided it before the nodes stalled had failed: "2
// refused, 1 failed", ErrNotObtained alone, where three of five failed
// (found by an outside check, on real servers). An attempt, or
// a caller's Extend, that failed with a failure among its replies now waits
// for the replies still out, for up to twice the node timeout, when they could make
// the failures more than N − quorum; when they cannot (the key held on a
// quorum's worth of the nodes that answer), it waits for nothing more.
func TestUnavailableOutDecide(t *testing.T) {
	const nodeTimeout = time.Second
	for _, tc := range []struct {
		name        string
		kinds       []string
		unavailable bool
		wait        time.Duration // the bubble's time the call takes
	}{
		{"5 nodes, 2 held, 1 down, 2 stalled", []string{"held", "down", "held", "stalled", "stalled"}, true, nodeTimeout},
		{"5 nodes, 2 held, 3 stalled", []string{"held", "stalled", "held", "stalled", "stalled"}, true, nodeTimeout},
		{"3 nodes, 1 held, 1 down, 1 stalled", []string{"down", "held", "stalled"}, true, nodeTimeout},
		{"5 nodes, 3 held, 1 down, 1 stalled", []string{"held", "down", "held", "held", "stalled"}, false, 0},
		{"5 nodes, 3 held, 2 stalled", []string{"held", "stalled", "held", "held", "stalled"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range acquirers(redlock.WithMaxAttempts(1)) {
				t.Run(m.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						rc := newRefusalCluster(t, tc.kinds...)
						c := newClient(t, rc.nodes, redlock.WithNodeTimeout(nodeTimeout))
						start := time.Now()
						err := m.acquire(t.Context(), c)
						took := time.Since(start)
						require.ErrorIs(t, err, redlock.ErrNotObtained)
						var v *redlock.VoteError
						require.ErrorAs(t, err, &v)
						if tc.unavailable {
							require.ErrorIs(t, err, redlock.ErrUnavailable, "%v", err)
							require.Greater(t, v.Failed, v.Nodes-v.Needed, "%v", err)
						} else {
							require.NotErrorIs(t, err, redlock.ErrUnavailable, "%v", err)
							require.Greater(t, v.Refused, v.Nodes-v.Needed, "%v", err)
						}
						require.Equal(t, tc.wait, took, "the time the verdict took: %v", err)
					})
				})
			}
		})
	}
}

// A caller's Extend follows the same rule: a lock held on five nodes whose
// keys are then taken by another on two (refusing at once), one node down
// and two stalled: its error matches ErrUnavailable, three of five having
// failed, not ErrLockLost alone for the refusals and the first failure.
func TestExtendUnavailableOutDecide(t *testing.T) {
	const nodeTimeout = time.Second
	synctest.Test(t, func(t *testing.T) {
		rc := newRefusalCluster(t, "ok", "ok", "ok", "ok", "ok")
		c := newClient(t, rc.nodes, redlock.WithNodeTimeout(nodeTimeout))
		l, err := c.TryLock(t.Context(), "k2")
		require.NoError(t, err)
		synctest.Wait() // every SET made, not only a quorum's
		for _, i := range []int{0, 2} {
			require.True(t, rc.mem[i].Delete("k2"))
			ok, err := rc.mem[i].SetNX(t.Context(), "k2", "another's", time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		}
		rc.mem[1].SetDown(true)
		rc.mem[3].SetStalled(true)
		rc.mem[4].SetStalled(true)
		start := time.Now()
		err = l.Extend(t.Context(), 30*time.Second)
		require.Equal(t, nodeTimeout, time.Since(start), "%v", err)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "%v", err)
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		require.Equal(t, 3, v.Failed, "%v", err)
		require.Equal(t, 2, v.Refused, "%v", err)
		rc.mem[3].SetStalled(false)
		rc.mem[4].SetStalled(false)
	})
}

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
	for _, m := range acquirers()[1:] { // Lock and Do: TryLock has no earlier attempt
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

// An acquirer acquires the key "k" one way.
type acquirer struct {
	name    string
	acquire func(ctx context.Context, c *redlock.Client) error
}

// acquirers are TryLock, then Lock and Do with opts, each acquiring "k"; Do's
// function must not run.
func acquirers(opts ...redlock.Option) []acquirer {
	return []acquirer{
		{"TryLock", func(ctx context.Context, c *redlock.Client) error {
			_, err := c.TryLock(ctx, "k")
			return err
		}},
		{"Lock", func(ctx context.Context, c *redlock.Client) error {
			_, err := c.Lock(ctx, "k", opts...)
			return err
		}},
		{"Do", func(ctx context.Context, c *redlock.Client) error {
			return c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") }, opts...)
		}},
	}
}
