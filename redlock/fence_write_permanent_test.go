package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// counterNotNumber is a fencing node whose counter writes fail as the
// Redis scripts fail on a counter that holds no number (a lock named as its
// own counter, redlock:fence:{0}, holds its value there once its SET
// landed): an error that retrying cannot fix (driver.PermanentCode).
type counterNotNumber struct {
	driver.Node
	raises *atomic.Int64
}

var errCounterNotNumber = errors.New("ERR fencing counter holds no number: redlock:fence:{0}")

func (counterNotNumber) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, _ string) (bool, uint64, error) {
	return true, 0, nil
}

func (n counterNotNumber) RaiseFence(context.Context, string, string, string, uint64) (bool, error) {
	n.raises.Add(1)
	return false, errCounterNotNumber
}

// A Lock whose SETs a quorum granted but whose fencing token more than
// N-quorum nodes refused to write with an error retrying cannot fix stops
// at once, as one whose SETs got such errors: its error says so ("2
// answered ERR fencing counter holds no number, which retrying cannot
// fix"). Before, the attempt's verdict on retrying was that of its SETs
// alone, and Lock retried until its context ended (for ever without a
// deadline), each attempt failing the same way.
func TestFenceWritePermanentStopsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		var raises atomic.Int64
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = counterNotNumber{m, &raises}
		}
		c := newClient(t, nodes, redlock.WithFencing())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := c.Lock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrFenceNotWritten)
		require.ErrorIs(t, err, errCounterNotNumber)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "Lock retried until its context ended")
		require.Contains(t, err.Error(), "which retrying cannot fix")
		require.LessOrEqual(t, raises.Load(), int64(len(nodes)), "RaiseFence calls: more than one attempt's")
	})
}
