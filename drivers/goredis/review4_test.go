package goredis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// A READONLY reply (the server turned replica, as in a failover): go-redis
// counts READONLY as a bad connection (isBadConn) and marks the lane's
// StickyConnPool bad, so that every later command on that *redis.Conn fails
// with pool.BadConnError, which unwraps to the READONLY error. When give kept
// the lane after a Redis error reply (its first version), the node's lone
// calls then failed for good (while they came within laneIdle of each
// other), even after the server was a primary again; now any failure closes
// the lane.
func TestReview4LaneStuckAfterReadOnly(t *testing.T) {
	srv := redistest.NewServer(t)
	n, ctx := laneOn(t, srv.Addr())

	_, err := srv.Do(t.Context(), "REPLICAOF", "127.0.0.1", "1") // no master there: a read-only replica
	require.NoError(t, err)
	t.Cleanup(func() { srv.Do(t.Context(), "REPLICAOF", "NO", "ONE") })
	_, err = n.SetNX(ctx, "k1", "v", time.Minute)
	require.ErrorContains(t, err, "READONLY")

	_, err = srv.Do(t.Context(), "REPLICAOF", "NO", "ONE") // a primary again
	require.NoError(t, err)
	failed := 0
	var last error
	for range 20 {
		if _, err := n.SetNX(ctx, "k2", "v", time.Minute); err != nil {
			failed++
			last = err
		} else {
			_, _ = n.EvalRelease(ctx, "k2", "v")
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Zero(t, failed, "%d of 20 lone calls failed after the server became a primary again; last: %v", failed, last)
}

// Lone calls racing with Close, some timing out: no data race, no panic,
// every reply is the call's own (a fresh key's SET NX is true, an Extend of
// a key never set is false), and once everything returned no lane is left.
func TestReview4LaneCloseRace(t *testing.T) {
	srv := redistest.NewServer(t)
	for round := range 5 {
		n := openNode(t, srv.Addr())
		var wg sync.WaitGroup
		var bad atomic.Int32
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					timeout := 250 * time.Millisecond
					if i%7 == 3 {
						timeout = time.Microsecond // times out: the lane is dropped
					}
					ctx := driver.WithNetworkTimeout(context.Background(), timeout)
					key := fmt.Sprintf("r%d-g%d-%d", round, g, i)
					ok, err := n.SetNX(ctx, key, "v", time.Minute)
					if errors.Is(err, driver.ErrClosed) {
						return
					}
					if err == nil && !ok {
						bad.Add(1)
					}
					ok, err = n.Extend(ctx, key+"-missing", "v", time.Minute)
					if err == nil && ok {
						bad.Add(1)
					}
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, n.Close())
		wg.Wait()
		require.Zero(t, bad.Load(), "a call read another's reply")
		require.Nil(t, n.lanes.idle.Load(), "a lane outlived Close")
		require.False(t, n.lanes.made.Load(), "a lane outlived Close")
	}
}

// A fresh lane whose first call ended before it was sent (its caller's
// context ended while it waited for the warmer's connection) is given back
// unused, with no connection yet. The next lone call must still wait for the
// warmer: when take called it not fresh (its first version), onLane skipped
// the warmer's wait and the lane's first command had the pool dial and run
// the handshake inside the call's deadline, the very thing the warmer exists
// to avoid (a slow link then fails that call). Seen here as a second
// connection dialed while the warmer's is still being made (the server is
// paused).
func TestReview4UnusedFreshLaneSkipsWarmer(t *testing.T) {
	srv := redistest.NewServer(t)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	n := openNode(t, srv.Addr())

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := n.SetNX(lone(ctx), "k", "v", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, n.lanes.idle.Load(), "the unused lane was not given back")
	dialed := n.client.PoolStats().Misses // the warmer's connection, still in its handshake

	_, err = n.SetNX(driver.WithNetworkTimeout(t.Context(), 100*time.Millisecond), "k", "v", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, dialed, n.client.PoolStats().Misses,
		"the second lone call dialed a connection of its own instead of waiting for the warmer's")
}

// Checks that pass: NOSCRIPT is answered by EVAL on the same lane, which is
// kept; a TLS node carries lone calls on its lane and drops it after a
// timeout, the next call reading its own reply.
func TestReview4LaneNoScriptAndTLS(t *testing.T) {
	srv := redistest.NewServer(t)
	n, ctx := laneOn(t, srv.Addr())
	l := n.lanes.idle.Load()
	_, err := srv.Do(t.Context(), "SCRIPT", "FLUSH")
	require.NoError(t, err)
	ok, err := n.Extend(ctx, "warm", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Same(t, l, n.lanes.idle.Load(), "NOSCRIPT dropped the lane")

	tsrv := redistest.NewServer(t, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired))
	tn, _ := laneOn(t, tsrv.URL())
	require.NoError(t, tsrv.Pause())
	_, err = tn.SetNX(driver.WithNetworkTimeout(t.Context(), 50*time.Millisecond), "late", "v", time.Minute)
	require.NoError(t, tsrv.Resume())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, tn.lanes.made.Load())
	ok, err = tn.Extend(ctx, "missing", "v", time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "a late reply was read")
}
