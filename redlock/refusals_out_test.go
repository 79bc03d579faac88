package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// errNoPermSet is the reply of Redis to a SET or PEXPIRE by an ACL user
// that may not touch the key: an error retrying cannot fix.
var errNoPermSet = errors.New("NOPERM No permissions to access a key")

// refusingAfter is a memory node that, while on is set, answers every SET
// and extension with errNoPermSet after delay (the bubble's clock, in
// testing/synctest), each refusal counted in refusals; otherwise it passes
// them to its node.
type refusingAfter struct {
	*memory.Node
	on       *atomic.Bool
	delay    time.Duration
	refusals *atomic.Int32
}

func (n refusingAfter) refuse(ctx context.Context) error {
	n.refusals.Add(1)
	select {
	case <-time.After(n.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return errNoPermSet
}

func (n refusingAfter) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.on.Load() {
		return false, n.refuse(ctx)
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n refusingAfter) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.on.Load() {
		return false, n.refuse(ctx)
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// refusalCluster is the nodes of one case of TestRefusalsOutDecide: each
// node is "down" (memory.SetDown: fails at once, as a server whose port is
// closed), "stalled" (answers nothing: times out at the node timeout),
// "held" (another holds the key: answers false at once), "ok", or "noperm"
// (refuses every SET, after 1ms for the first such node, 2ms for the
// second, ...: the replies of the other nodes come first).
type refusalCluster struct {
	nodes    []driver.Node
	mem      []*memory.Node
	on       []*atomic.Bool  // by node: its refusals are on
	refusals []*atomic.Int32 // by node: the refusals it answered
}

func newRefusalCluster(t *testing.T, kinds ...string) *refusalCluster {
	rc := &refusalCluster{}
	nth := 0
	for _, kind := range kinds {
		m := memory.New()
		on, refusals := new(atomic.Bool), new(atomic.Int32)
		var n driver.Node = m
		switch kind {
		case "down":
			m.SetDown(true)
		case "stalled":
			m.SetStalled(true)
		case "held":
			ok, err := m.SetNX(t.Context(), "k", "another's", time.Hour)
			require.NoError(t, err)
			require.True(t, ok)
		case "noperm":
			nth++
			on.Store(true)
			n = refusingAfter{Node: m, on: on, delay: time.Duration(nth) * time.Millisecond, refusals: refusals}
		case "ok":
		default:
			t.Fatalf("unknown node kind %q", kind)
		}
		rc.nodes = append(rc.nodes, n)
		rc.mem = append(rc.mem, m)
		rc.on = append(rc.on, on)
		rc.refusals = append(rc.refusals, refusals)
	}
	return rc
}

// refused is how many refusals the nodes answered in all.
func (rc *refusalCluster) refused() int32 {
	var n int32
	for _, r := range rc.refusals {
		n += r.Load()
	}
	return n
}

// requireNamesRefusals checks that err, an acquisition's, stops for the
// refusals: ErrNotObtained and ErrUnavailable, a *VoteError that counts
// want of them and says retrying cannot fix them, and a *NodeError for
// each refusing node.
func requireNamesRefusals(t *testing.T, err error, want int) {
	t.Helper()
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrUnavailable)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the acquisition waited for its context")
	require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
	var v *redlock.VoteError
	require.ErrorAs(t, err, &v)
	require.Equal(t, want, v.Permanent, "%v", err)
	require.Equal(t, want, nodeRefusals(err), "a *NodeError per refusing node:\n%v", err)
}

// nodeRefusals counts the *NodeErrors of errNoPermSet in err's joins.
func nodeRefusals(err error) int {
	if ne, ok := err.(*redlock.NodeError); ok {
		if errors.Is(ne, errNoPermSet) {
			return 1
		}
		return 0
	}
	n := 0
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			n += nodeRefusals(e)
		}
	}
	return n
}

// An acquisition's round decides as soon as a quorum is out of reach, and
// judged then whether the errors retrying cannot fix (NOPERM: an ACL user
// that may not touch the key) made a quorum impossible: with three nodes,
// one down (failing at once) and two refusing, the round was decided by
// the down node's error and the first refusal, saw one error retrying
// cannot fix, and Lock and Do retried until their context ended (found by
// an outside review). A round that failed with such an error now waits for
// the replies still out, for up to twice the node timeout, when they could make
// such errors a quorum's, before it says whether retrying can help. Also
// with five nodes (two down, three refusing: stop; two refusing, three
// timing out: retry, since the down nodes may come back) and with a node
// that answers false (another's key) in place of the down one.
func TestRefusalsOutDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []string
		stop  bool // a quorum is impossible for good: Lock stops
	}{
		{"3 nodes, 1 down, 2 refusing", []string{"down", "noperm", "noperm"}, true},
		{"3 nodes, 1 held elsewhere, 2 refusing", []string{"held", "noperm", "noperm"}, true},
		{"5 nodes, 2 down, 3 refusing", []string{"down", "down", "noperm", "noperm", "noperm"}, true},
		{"5 nodes, 2 refusing, 3 timing out", []string{"noperm", "noperm", "stalled", "stalled", "stalled"}, false},
		{"5 nodes, 2 refusing, 3 down", []string{"noperm", "down", "noperm", "down", "down"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusing := strings.Count(strings.Join(tc.kinds, " "), "noperm")
			for _, m := range []struct {
				name    string
				acquire func(ctx context.Context, c *redlock.Client) error
			}{
				{"Lock", func(ctx context.Context, c *redlock.Client) error {
					if !tc.stop {
						// Retried: three attempts, the cap's.
						_, err := c.Lock(ctx, "k", redlock.WithMaxAttempts(3))
						return err
					}
					_, err := c.Lock(ctx, "k")
					return err
				}},
				{"Do", func(ctx context.Context, c *redlock.Client) error {
					return c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") })
				}},
				{"TryLock", func(ctx context.Context, c *redlock.Client) error {
					_, err := c.TryLock(ctx, "k")
					return err
				}},
			} {
				if !tc.stop && m.name != "Lock" {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						rc := newRefusalCluster(t, tc.kinds...)
						c := newClient(t, rc.nodes, redlock.WithNodeTimeout(time.Second), redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
						ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
						defer cancel()
						err := m.acquire(ctx, c)
						require.NoError(t, ctx.Err(), "%s waited for its context: %v", m.name, err)
						if !tc.stop {
							require.ErrorIs(t, err, redlock.ErrNotObtained)
							require.ErrorIs(t, err, redlock.ErrUnavailable)
							require.NotContains(t, err.Error(), "which retrying cannot fix")
							synctest.Wait() // the last attempt's calls made, though it was decided without them
							require.Equal(t, int32(3*refusing), rc.refused(), "refusals: one per refusing node and attempt")
							return
						}
						requireNamesRefusals(t, err, refusing)
						require.Equal(t, int32(refusing), rc.refused(), "%s made one attempt", m.name)
					})
				})
			}
		})
	}
	// A minority that refuses leaves a quorum to the others.
	t.Run("3 nodes, 1 refusing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rc := newRefusalCluster(t, "noperm", "ok", "ok")
			c := newClient(t, rc.nodes, redlock.WithNodeTimeout(time.Second))
			l, err := c.Lock(t.Context(), "k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
		})
	})
}

// Do's extensions follow the same rule as its acquisition: an extension
// that a node down (failing at once) and one refusal decided did not see
// the second node's refusal, so the keeper retried it until the validity
// ended (EndExpired, a TTL after the grant) rather than give the lock up
// at the first extension (EndRefused), as it does when the refusals come
// first (TestKeeperStopsOnPermanentExtendError).
func TestKeeperRefusalsOutDecide(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		rc := newRefusalCluster(t, "ok", "ok", "ok")
		nodes := []driver.Node{
			rc.mem[0],
			refusingAfter{Node: rc.mem[1], on: rc.on[1], delay: time.Millisecond, refusals: rc.refusals[1]},
			refusingAfter{Node: rc.mem[2], on: rc.on[2], delay: 2 * time.Millisecond, refusals: rc.refusals[2]},
		}
		o := &refusalObserver{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every), redlock.WithObserver(o), redlock.WithNodeTimeout(time.Second))
		var after time.Duration
		var cause error
		doErr := c.Do(t.Context(), "k", func(ctx context.Context) error {
			synctest.Wait() // the grant's last SET answered, before the faults
			rc.mem[0].SetDown(true)
			rc.on[1].Store(true)
			rc.on[2].Store(true)
			start := time.Now()
			<-ctx.Done()
			after, cause = time.Since(start), context.Cause(ctx)
			return nil
		})
		// The second refusal comes 2ms into the extension.
		require.Equal(t, every+2*time.Millisecond, after, "fn's context canceled %v after the grant, want at the first extension's second refusal (%v), not at the validity's end", after, every+2*time.Millisecond)
		require.ErrorIs(t, cause, redlock.ErrLockLost)
		require.ErrorContains(t, cause, "NOPERM, which retrying cannot fix")
		require.ErrorIs(t, doErr, redlock.ErrLockLost)
		require.Equal(t, int32(2), rc.refused(), "extensions refused: the first one's, by both refusing nodes")
		o.mu.Lock()
		defer o.mu.Unlock()
		require.Equal(t, []string{redlock.EndRefused}, o.ends)
	})
}

// A caller's Extend follows the same rule as an acquisition: one that a
// node down (failing at once) and one refusal decided counted one error
// retrying cannot fix (VoteError.Permanent 1, no "retrying cannot fix"),
// where TryLock's, in the same state of the nodes, counts both (found by
// the outside review V5): a caller's loop of Extends could not tell.
func TestExtendRefusalsOutDecide(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := newRefusalCluster(t, "ok", "ok", "ok")
		nodes := []driver.Node{
			rc.mem[0],
			refusingAfter{Node: rc.mem[1], on: rc.on[1], delay: time.Millisecond, refusals: rc.refusals[1]},
			refusingAfter{Node: rc.mem[2], on: rc.on[2], delay: 2 * time.Millisecond, refusals: rc.refusals[2]},
		}
		c := newClient(t, nodes, redlock.WithNodeTimeout(time.Second))
		l, err := c.Lock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // the grant's last SET answered, before the faults
		rc.mem[0].SetDown(true)
		rc.on[1].Store(true)
		rc.on[2].Store(true)
		start := time.Now()
		err = l.Extend(t.Context(), 30*time.Second)
		require.Equal(t, 2*time.Millisecond, time.Since(start), "Extend returned %v after it began, want at the second refusal", time.Since(start))
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		require.Equal(t, 2, v.Permanent, "%v", err)
		require.Equal(t, 2, nodeRefusals(err), "a *NodeError per refusing node:\n%v", err)
		l.Unlock(t.Context())
	})
}
