package redlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Connect with a context that has already ended asks no node (no I/O, as
// an acquisition's attempt sends nothing then) and returns the context's
// error, every time: before, it asked every node with the ended context
// and returned nil or context.Canceled, whichever its select took first,
// for nodes that answer at once.
func TestConnectEndedContextAsksNothing(t *testing.T) {
	for i := range 50 {
		ids, nodes := countedIDNodes(3)
		c := newClient(t, nodes)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := c.Connect(ctx)
		require.ErrorIs(t, err, context.Canceled, "try %d", i)
		require.Equal(t, []int32{0, 0, 0}, askedTimes(ids), "try %d: asked with an ended context", i)
		// A quorum told already: nil, as when ctx ends once a quorum
		// answered; the node left is not asked.
		ids[2].stall = true
		require.NoError(t, c.Connect(t.Context()), "try %d", i)
		require.NoError(t, c.Connect(ctx), "try %d", i)
		require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "try %d", i)
	}
}
