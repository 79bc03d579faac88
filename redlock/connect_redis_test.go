package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// infoCalls returns how many INFO commands s has run (INFO commandstats),
// this one not included: the identity question of the Redis drivers.
func infoCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	v, err := s.Do(ctx, "INFO", "commandstats")
	require.NoError(t, err)
	text := fmt.Sprint(v)
	_, rest, found := strings.Cut(text, "cmdstat_info:calls=")
	if !found {
		return 0
	}
	n, _, _ := strings.Cut(rest, ",")
	calls, err := strconv.Atoi(n)
	require.NoError(t, err, "INFO commandstats: %q", text)
	return calls
}

// infoDeltas returns, for each server, the INFO commands it ran since
// before, and updates before (each infoCalls is itself an INFO, counted at
// the next read).
func infoDeltas(t *testing.T, servers []*redistest.Server, before []int) []int {
	t.Helper()
	d := make([]int, len(servers))
	for i, s := range servers {
		now := infoCalls(t, s)
		if before[i] >= 0 {
			d[i] = now - before[i] - 1
		}
		before[i] = now
	}
	return d
}

// After Connect, the first acquisitions (TryLock, Lock, Do) ask no node its
// identity again, through every Redis driver: each server runs the
// question's INFO for Connect and none for them. Without Connect, the first TryLock asks each
// server (the check that the count sees the question).
func TestRedisConnectThenLockAsksNoIdentity(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	zero := []int{0, 0, 0}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			before := []int{-1, -1, -1}
			infoDeltas(t, servers, before)

			plain := openRedis(t, name, servers, slow...)
			l, err := plain.TryLock(t.Context(), name+"/plain")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			require.NoError(t, plain.Close()) // its questions end
			// The question is one INFO or two (INFO server, then INFO
			// cluster), by driver.
			question := infoDeltas(t, servers, before)
			for i, n := range question {
				require.Positive(t, n, "server %d: a fresh Client's first TryLock asks each node", i)
			}

			c := openRedis(t, name, servers, slow...)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, c.Connect(ctx))
			require.Equal(t, question, infoDeltas(t, servers, before), "Connect asks each node once")
			l, err = c.TryLock(t.Context(), name+"/k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			l, err = c.Lock(t.Context(), name+"/k2")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			require.NoError(t, c.Do(t.Context(), name+"/k3", func(context.Context) error { return nil }))
			require.NoError(t, c.Connect(ctx))
			require.NoError(t, c.Close()) // anything in flight ends
			require.Equal(t, zero, infoDeltas(t, servers, before), "asked again after Connect")
		})
	}
}

// One node down (connection refused): Connect returns nil, the others a
// quorum, and the Client takes locks. Two down of three: an error matching
// ErrUnavailable, with a *NodeError naming a down node, not the context's.
func TestRedisConnectNodesDown(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	down := redistest.DownAddrs(t, 2)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			minority, err := redlock.Open(name, []string{servers[0].Addr(), down[0], servers[1].Addr()}, slow...)
			require.NoError(t, err)
			defer minority.Close()
			require.NoError(t, minority.Connect(ctx), "a quorum is up")
			l, err := minority.TryLock(t.Context(), name+"/k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))

			majority, err := redlock.Open(name, []string{down[0], servers[0].Addr(), down[1]}, slow...)
			require.NoError(t, err)
			defer majority.Close()
			err = majority.Connect(ctx)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
			require.NoError(t, ctx.Err(), "the nodes' failures, not the context's end: %v", err)
			var ne *redlock.NodeError
			require.ErrorAs(t, err, &ne)
			require.Contains(t, []string{down[0], down[1]}, ne.Addr)
		})
	}
}

// Nodes that accept connections and never answer: Connect returns when ctx
// ends, with ctx.Err() (not ErrUnavailable), its questions ended; Close
// during a Connect with no deadline makes it return ErrClosed, without
// waiting for the node timeout.
func TestRedisConnectSilentNodes(t *testing.T) {
	silent := []string{redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr()}
	// A node timeout longer than the test's: Close would have to wait it
	// for questions Connect did not cut.
	opts := []redlock.Option{redlock.WithTTL(20 * time.Minute), redlock.WithNodeTimeout(10 * time.Minute)}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, silent, opts...)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			err = c.Connect(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NotErrorIs(t, err, redlock.ErrUnavailable)

			closing, err := redlock.Open(name, silent, opts...)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- closing.Connect(context.Background()) }()
			time.Sleep(100 * time.Millisecond) // Connect is likely asking; ErrClosed either way
			closed := make(chan error, 1)
			go func() { closed <- closing.Close() }()
			select {
			case err := <-done:
				require.ErrorIs(t, err, redlock.ErrClosed)
			case <-t.Context().Done():
				t.Fatal("Connect did not return at Close")
			}
			select {
			case <-closed:
			case <-t.Context().Done():
				t.Fatal("Close did not return: it waits for Connect's questions")
			}
		})
	}
}

// Two addresses of one server: Connect finds them, with the error that the
// acquisitions return from then on.
func TestRedisConnectFindsDuplicate(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	_, port, _ := strings.Cut(servers[0].Addr(), ":")
	twice := []string{servers[0].Addr(), "localhost:" + port, servers[1].Addr()}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, twice, slow...)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err = c.Connect(ctx)
			require.ErrorContains(t, err, "reach the same server")
			require.ErrorContains(t, err, "nodes 1 (")
			require.ErrorIs(t, err, redlock.ErrSameServer)
			require.False(t, errors.Is(err, redlock.ErrUnavailable), "a configuration error: %v", err)
			_, again := c.TryLock(t.Context(), name+"/k")
			require.Equal(t, err, again, "the acquisitions' error is Connect's")
		})
	}
}
