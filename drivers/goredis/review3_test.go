package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// A lone call with a network timeout on a node from Open, canceled while it
// waits for its first connection (the warmer's, which a paused server never
// answers), returns at the cancellation, as the package documentation says
// ("waits for it as long as its context allows"): with shared deadlines
// (84a63cd) the wait watched only the shared deadline and the call returned
// at its network timeout, until the wait watched the caller's context too.
func TestReview3CanceledWhileWarming(t *testing.T) {
	srv := redistest.NewServer(t)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	n := open(t, srv.Addr())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := n.SetNX(driver.WithNetworkTimeout(ctx, 3*time.Second), "k", "v", time.Minute)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, context.Canceled)
	// Well before the network timeout, with room for a loaded machine.
	require.Less(t, elapsed, 1500*time.Millisecond, "returned %v after the call began, %v after its cancellation", elapsed, elapsed-50*time.Millisecond)
}
