package rueidis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/internal/rueidiscore"
	"github.com/go-redlock/redlock/redistest"
)

// A call still waiting at the node's gate (MaxInFlight calls in flight on a
// stalled server) when the node is closed is never sent: it fails with
// driver.ErrClosed, as a call after Close does, also on a node from New
// whose client, the user's, stays open.
func TestQueuedCallNotSentAfterClose(t *testing.T) {
	srv := redistest.NewServer(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr()}, ForceSingleClient: true, DisableCache: true, DisableRetry: true,
	})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	n := rueidisdriver.New(rc)
	_, err = n.SetNX(t.Context(), "warm", "v", time.Minute)
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
	const sent, queued = rueidiscore.MaxInFlight, 4
	errs := make([]error, sent+queued)
	var wg sync.WaitGroup
	for i := range sent + queued {
		wg.Go(func() { _, errs[i] = n.SetNX(ctx, fmt.Sprint("q", i), "v", time.Minute) })
		if i >= sent-1 {
			time.Sleep(20 * time.Millisecond) // the first ones in flight before the others
		}
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, n.Close())
	require.NoError(t, srv.Resume())
	resumed = true
	wg.Wait()
	for i := sent; i < sent+queued; i++ {
		require.ErrorIs(t, errs[i], driver.ErrClosed, "call %d, queued at Close", i)
		got, err := srv.Do(t.Context(), "EXISTS", fmt.Sprint("q", i))
		require.NoError(t, err)
		require.EqualValues(t, 0, got, "call %d, queued when the node was closed, was sent after Close", i)
	}
}
