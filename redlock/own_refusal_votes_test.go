package redlock_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// unconfirmedNode is a node whose calls time out after it applied them, as
// with a node timeout shorter than its round trip: a SET while lose is set
// is applied and fails, and a release always fails, unapplied (it timed out
// before the node read it).
type unconfirmedNode struct {
	n    *memory.Node
	lose *atomic.Bool
}

func (u unconfirmedNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := u.n.SetNX(ctx, key, value, ttl)
	if u.lose.Load() {
		return false, context.DeadlineExceeded
	}
	return ok, err
}

func (u unconfirmedNode) EvalRelease(context.Context, string, string) (bool, error) {
	return false, context.DeadlineExceeded
}

func (u unconfirmedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return u.n.Extend(ctx, key, value, ttl)
}

func (u unconfirmedNode) Close() error { return u.n.Close() }

// attemptVotes records the votes of each acquisition attempt, and calls
// ended (if not nil) after each.
type attemptVotes struct {
	redlock.NopObserver
	mu    sync.Mutex
	votes []redlock.Votes
	ended func()
}

func (o *attemptVotes) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	return ctx, func(d redlock.AttemptDone) {
		o.mu.Lock()
		o.votes = append(o.votes, d.Votes)
		o.mu.Unlock()
		if o.ended != nil {
			o.ended()
		}
	}
}

// A waiter's attempt refused by its own key of an earlier attempt (a SET
// that timed out after it was applied, its release timed out too) says so
// in Votes.Own: with --node-timeout 1ns, run told "held elsewhere: 3 of 3
// nodes refused" with no other client, the refusals all its own keys.
func TestVotesOwnCountsRefusalsByOwnKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lose atomic.Bool
		lose.Store(true)
		a, b := memory.New(), memory.New()
		// a and b answer after the third node: the third's grant of
		// the first attempt is then recorded, and released there
		// before the attempt returns. Without it, the first attempt
		// could be decided by a's and b's failures first, its release
		// on the third left to the background, and the second attempt
		// refused there by that key too (Refused 3, Own 3: 15 of 100
		// runs with -race).
		a.SetLatency(time.Millisecond)
		b.SetLatency(time.Millisecond)
		nodes := []driver.Node{unconfirmedNode{a, &lose}, unconfirmedNode{b, &lose}, memory.New()}
		// The second attempt's SETs answer: the nodes' keys are the
		// first's.
		obs := &attemptVotes{ended: func() { lose.Store(false) }}
		votes := twoAttempts(t, nodes, obs)
		require.True(t, a.Holds("k") && b.Holds("k"), "the first attempt's keys stay: their releases timed out")
		require.Equal(t, 0, votes[0].Own, "the first attempt: no earlier key of its own")
		v := votes[1]
		require.Equal(t, 2, v.Refused, "%+v", v)
		require.Equal(t, 2, v.Own, "the second attempt's refusals are by the first's keys: %+v", v)
	})
}

// Own counts too a node that granted the earlier attempt, whose release
// there failed: its SET was no unknown outcome, but its key stays as well.
func TestVotesOwnCountsGrantedUnreleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lose atomic.Bool // SETs answer; only releases fail
		a, b, c := memory.New(), memory.New(), memory.New()
		for _, n := range []*memory.Node{b, c} {
			ok, err := n.SetNX(t.Context(), "k", "another's", time.Minute)
			require.True(t, ok)
			require.NoError(t, err)
			// b and c answer after a, whose grant (then its refusal)
			// is so recorded before b's and c's refusals decide.
			n.SetLatency(time.Millisecond)
		}
		nodes := []driver.Node{unconfirmedNode{a, &lose}, b, c}
		votes := twoAttempts(t, nodes, &attemptVotes{})
		// a granted the first attempt (before or after the others'
		// refusals decided it), and its release there failed.
		require.True(t, a.Holds("k"), "the first attempt's key stays on a")
		v := votes[1]
		require.Equal(t, 3, v.Refused, "%+v", v)
		require.Equal(t, 1, v.Own, "a refused with the first attempt's key, which its SET had set: %+v", v)
	})
}

// twoAttempts makes a Lock of "k" on nodes, of two attempts, which must
// both fail, and returns the votes obs recorded of them.
func twoAttempts(t *testing.T, nodes []driver.Node, obs *attemptVotes) []redlock.Votes {
	t.Helper()
	c, err := redlock.New(nodes, redlock.WithTTL(time.Second), redlock.WithObserver(obs), redlock.WithMaxAttempts(2),
		redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Lock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.votes, 2)
	return slices.Clone(obs.votes)
}
