package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// Lock and Do over nodes closed by their own Close (here, memory nodes)
// stop at once too.
func TestLockOverClosedNodes(t *testing.T) {
	var nodes []driver.Node
	for range 3 {
		nodes = append(nodes, memory.New())
	}
	c, err := redlock.New(nodes)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	for _, n := range nodes {
		require.NoError(t, n.Close())
	}
	requireStopsOnClosedNodes(t, c)
}

// requireStopsOnClosedNodes checks that Lock and Do on c, whose nodes are
// closed, return at once, with an error that says so.
func requireStopsOnClosedNodes(t *testing.T, c *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Lock(ctx, "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.Contains(t, err.Error(), "ErrClosed (the node, or the client under it, was closed), which retrying cannot fix")
	err = c.Do(ctx, "k", func(context.Context) error {
		t.Error("fn ran without the lock")
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrClosed)
	require.NoError(t, ctx.Err(), "Lock and Do waited for their context")
	require.Less(t, time.Since(start), 5*time.Second, "Lock and Do on closed nodes")
}
