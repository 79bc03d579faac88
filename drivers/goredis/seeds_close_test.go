package goredis

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// The Close of a cluster node whose seeds check (see clusterseeds) is in
// flight, asking seeds that accepted the connection and never answer (a
// server stopped by SIGSTOP, blackholed after the handshake), ends the check
// at once: each question's connection is closed when Close cancels it. The
// question is a go-redis client's, which bounds its reads by its
// ReadTimeout and the context's deadline but not by the context's
// cancellation, so that Close otherwise waited ioTimeout (3s) for the reads.
func TestCloseWhileSeedsCheckStalls(t *testing.T) {
	sa, sb := redistest.NewSilent(t), redistest.NewSilent(t)
	a, accA := sa.Addr(), sa.Accepted
	b, accB := sb.Addr(), sb.Accepted
	n, err := Driver{}.Open("redis://" + a + "?cluster=true&addr=" + b)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	// The first call starts the check, and fails when its context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = n.SetNX(ctx, "k", "v", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// Both questions are in flight: connected, waiting for the replies.
	require.Eventually(t, func() bool { return accA() > 0 && accB() > 0 },
		10*time.Second, 5*time.Millisecond, "the seeds were not asked")
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	// A watchdog of half the reads' own bound: a Close that waits for them
	// takes all of it, one that ends them a few milliseconds.
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(ioTimeout / 2):
		t.Fatal("Close waits for the seeds check's questions to stalled seeds until their read timeout")
	}
}
