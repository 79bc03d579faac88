package goredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// A call still waiting in the node's queue (both senders busy on a stalled
// server) when the node is closed is never sent: it fails with
// driver.ErrClosed, as a call after Close does, also on a node from New
// whose client, the user's, stays open. The calls already sent may still be
// applied when the server resumes.
func TestQueuedCallNotSentAfterClose(t *testing.T) {
	srv := redistest.NewServer(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	n := goredis.New(rc)
	_, err := n.SetNX(t.Context(), "warm", "v", time.Minute)
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			srv.Resume()
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	const calls = 4 // two sent (the node's senders), two queued
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { _, errs[i] = n.SetNX(ctx, fmt.Sprint("q", i), "v", time.Minute) })
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, n.Close())
	require.NoError(t, srv.Resume())
	resumed = true
	wg.Wait()
	for i := 2; i < calls; i++ {
		require.ErrorIs(t, errs[i], driver.ErrClosed, "call %d, queued at Close", i)
		got, err := srv.Do(t.Context(), "EXISTS", fmt.Sprint("q", i))
		require.NoError(t, err)
		require.EqualValues(t, 0, got, "call %d, queued when the node was closed, was sent after Close", i)
	}
}
