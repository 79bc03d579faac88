package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// socketDeadline fails a SET whose context's deadline has passed with
// DeadlineExceeded, at once, as a driver whose read is bounded by a socket
// deadline equal to the context's does (redigo), before the context's own
// timer fired.
type socketDeadline struct{ driver.Node }

func (n socketDeadline) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return false, context.DeadlineExceeded
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// passedDeadline is a context whose deadline has passed but whose timer has
// not fired yet: Err is still nil.
type passedDeadline struct {
	context.Context
	d time.Time
}

func (c passedDeadline) Deadline() (time.Time, bool) { return c.d, true }

// A call cut by the caller's deadline is not a node's failure, also when
// the driver saw the deadline before the context did: TryLock's error
// does not say the nodes are unavailable (TestRedisUnavailable read a held
// key's Lock, with a deadline of 300ms, as unavailable in 1 run of 4 on a
// loaded machine, the redigo calls failed by their socket deadlines).
func TestCallerDeadlineSeenFirstByTheDriver(t *testing.T) {
	mem, _ := memNodes(3)
	nodes := make([]driver.Node, len(mem))
	for i, m := range mem {
		nodes[i] = socketDeadline{m}
	}
	c := newClient(t, nodes, redlock.WithNodeTimeout(time.Second))
	ctx := passedDeadline{t.Context(), time.Now().Add(-time.Millisecond)}
	_, err := c.TryLock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, redlock.ErrUnavailable, "the caller's deadline ended the calls, not the nodes")
	var v *redlock.VoteError
	if errors.As(err, &v) {
		require.Zero(t, v.Failed, "no node failed: the caller's deadline cut the calls")
	}
}
