package redigo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// Calls whose contexts have no deadline on a server that stopped answering
// (paused: SIGSTOP) all fail by the node's read timeout (3s), those sent
// together in a pipeline as those sent alone, as the package doc says of an
// Open node ("readTimeout bounds a read when the call's context has no
// deadline") and as go-redis bounds its pipelines by its ReadTimeout. Before,
// a pipeline's replies were read with redis.ReceiveWithTimeout(c, 0), which
// redigo takes as no deadline at all, not the connection's own: the two
// calls sent alone failed after 3s, the six queued behind them and then sent
// as one pipeline waited for as long as the server was paused, and the
// node's sender goroutine and its connection with them, past the node's
// Close.
func TestPipelineWithoutDeadlineBoundedByReadTimeout(t *testing.T) {
	srv := redistest.NewServer(t)
	n := open(t, srv.Addr())
	for i := range 2 { // connections in the pool
		_, err := n.SetNX(t.Context(), fmt.Sprint("warm", i), "v", time.Minute)
		require.NoError(t, err)
	}
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })

	const calls = 8 // two sent alone (batch.Senders), the others queued behind them
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			_, err := n.SetNX(ctx, fmt.Sprint("k", i), "v", time.Minute)
			errs <- err
		}()
	}
	watchdog := time.After(30 * time.Second) // not a bound on the calls: they must return at all
	for i := range calls {
		select {
		case err := <-errs:
			require.Error(t, err, "a call on a paused server")
		case <-watchdog:
			t.Fatalf("%d of %d calls without a deadline on a paused server still running after 30s (the node's read timeout is 3s)", calls-i, calls)
		}
	}
}
