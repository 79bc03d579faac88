package redigo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// TestCallsAfterServerClosedPooledConnections: the server closes every
// connection of an Open node's pool (CLIENT KILL, as a restart does) while
// they are idle and were used less than idleCheck before; the next calls,
// alone or several at once (a pipeline), go through on live connections.
// Before, the pool handed out the dead connections unchecked and each call
// failed with EOF.
func TestCallsAfterServerClosedPooledConnections(t *testing.T) {
	srv := redistest.NewServer(t)
	n := open(t, srv.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ttl = time.Minute
	// Several connections in the pool, all just used.
	const keys = 8
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			ok, err := n.SetNX(ctx, fmt.Sprint("k", i), "v", ttl)
			if err != nil || !ok {
				t.Errorf("SetNX k%d before the kill: %v, %v", i, ok, err)
			}
		})
	}
	wg.Wait()
	kill := func() {
		t.Helper()
		_, err := srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal")
		require.NoError(t, err)
	}

	kill()
	ok, err := n.Extend(ctx, "k0", "v", ttl)
	require.NoError(t, err, "Extend right after the kill")
	require.True(t, ok)

	kill()
	// A SET NX goes again too, as driver.SetNXAgainScript (which counts a
	// key holding its value, as a first send that the server ran leaves it,
	// as set).
	ok, err = n.SetNX(ctx, "fresh", "v", ttl)
	require.NoError(t, err, "SetNX right after the kill")
	require.True(t, ok, "SetNX right after the kill")

	kill()
	for i := range keys {
		wg.Go(func() {
			ok, err := n.EvalRelease(ctx, fmt.Sprint("k", i), "v")
			if err != nil || !ok {
				t.Errorf("EvalRelease k%d right after the kill: %v, %v", i, ok, err)
			}
		})
	}
	wg.Wait()
	left, err := srv.Do(ctx, "EXISTS", "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7")
	require.NoError(t, err)
	require.Equal(t, int64(0), left, "keys left after the releases")
}
