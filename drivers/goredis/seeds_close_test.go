package goredis

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Close of a cluster node whose seeds check (see clusterseeds) is in
// flight, asking seeds that accepted the connection and never answer (a
// server stopped by SIGSTOP, blackholed after the handshake), ends the check
// at once: each question's connection is closed when Close cancels it. The
// question is a go-redis client's, which bounds its reads by its
// ReadTimeout and the context's deadline but not by the context's
// cancellation, so that Close otherwise waited ioTimeout (3s) for the reads.
func TestCloseWhileSeedsCheckStalls(t *testing.T) {
	a, accA := silentSeed(t)
	b, accB := silentSeed(t)
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

// silentSeed accepts connections on a loopback port, reads what they send
// and never answers. Its address is returned with a function that reports
// the connections accepted so far; the listener and the connections close
// when the test ends.
func silentSeed(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}
