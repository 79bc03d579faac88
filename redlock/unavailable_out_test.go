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
// (found by an outside check of issue 12, on real servers). An attempt, or
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
			for _, m := range []struct {
				name    string
				acquire func(ctx context.Context, c *redlock.Client) error
			}{
				{"TryLock", func(ctx context.Context, c *redlock.Client) error {
					_, err := c.TryLock(ctx, "k")
					return err
				}},
				{"Lock", func(ctx context.Context, c *redlock.Client) error {
					_, err := c.Lock(ctx, "k", redlock.WithMaxAttempts(1))
					return err
				}},
				{"Do", func(ctx context.Context, c *redlock.Client) error {
					return c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") }, redlock.WithMaxAttempts(1))
				}},
			} {
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
