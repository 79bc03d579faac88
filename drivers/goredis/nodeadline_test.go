package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// A client of the caller's with ContextTimeoutEnabled but a ReadTimeout of
// -2, which go-redis documents as "disables SetReadDeadline
// calls completely": go-redis then sets no deadline on the socket at all, not
// even the context's, so a command on a server that stopped answering waits
// for the server, whatever its context. The node must watch such a client's
// calls, as it does one without ContextTimeoutEnabled: each must return by
// its context's end. Before, New counted ContextTimeoutEnabled alone, ran the
// calls due within batch.CancelLag directly, and a call of 200ms on a paused
// server (SIGSTOP) returned only when the server resumed.
func TestNewDeadlinesDisabled(t *testing.T) {
	t.Run("Client", func(t *testing.T) {
		srv := redistest.NewServer(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
			ReadTimeout: -2})
		t.Cleanup(func() { rdb.Close() })
		stalledCallReturns(t, goredis.New(rdb), srv)
	})
	t.Run("Cluster", func(t *testing.T) {
		c := redistest.NewCluster(t, 1)
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1,
			ReadTimeout: -2})
		t.Cleanup(func() { rdb.Close() })
		stalledCallReturns(t, goredis.New(rdb), c.Shards()[0].Primary())
	})
}

// stalledCallReturns checks that a call of n, a node whose server is srv,
// returns by the end of its context while srv is paused: it must return at
// all while srv stays paused (srv resumes when the test ends), with the
// context's error. 30s is a watchdog, not a bound on the call's duration.
func stalledCallReturns(t *testing.T, n driver.Node, srv *redistest.Server) {
	t.Helper()
	t.Cleanup(func() { n.Close() })
	_, err := n.SetNX(t.Context(), "k", "v", time.Minute) // connected first
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := n.Extend(ctx, "k", "v", time.Minute)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(30 * time.Second):
		t.Fatal("a call of 200ms on a paused server still running after 30s: the node ran it unwatched on a client that sets no socket deadline")
	}
}
