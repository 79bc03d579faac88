package redistest_test

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

func TestRestartWithoutPersistenceForgets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	addr := s.Addr()
	_, err := s.Do(ctx, "SET", "k", "v", "PX", "60000")
	require.NoError(t, err)

	require.NoError(t, s.Restart(ctx))
	require.True(t, s.Running())
	require.Equal(t, addr, s.Addr(), "same port")
	v, err := s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	require.Nil(t, v, "a restarted node without persistence has forgotten its keys")
}

func TestRestartWithAOFRemembers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
	_, err := s.Do(ctx, "SET", "k", "v", "PX", "60000")
	require.NoError(t, err)
	dir := serverDir(t, s)

	require.NoError(t, s.Restart(ctx)) // SIGKILL: no shutdown rewrite, only what was fsynced
	require.Equal(t, dir, serverDir(t, s), "same directory")
	v, err := s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "v", v, "appendfsync always keeps every acknowledged write")
	pttl, err := s.Do(ctx, "PTTL", "k")
	require.NoError(t, err)
	require.Greater(t, pttl.(int64), int64(0), "the expiry survives the restart")
	require.LessOrEqual(t, pttl.(int64), int64(60000))
}

func TestRestartAfterStaysDown(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	// The PING below must start within the down time, after the kill is
	// seen: 300ms was a margin a loaded machine could pass (the server back
	// up, the PING answered).
	const down = time.Second
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.RestartAfter(ctx, down) }()

	require.Eventually(t, func() bool { return !s.Running() }, 5*time.Second, time.Millisecond)
	pingCtx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := s.Do(pingCtx, "PING")
	cancel()
	require.Error(t, err, "down during the delay")

	require.NoError(t, <-done)
	require.GreaterOrEqual(t, time.Since(start), down)
	v, err := s.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}

func TestRestartAfterKillAndPause(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	require.NoError(t, s.Kill())
	require.False(t, s.Running())
	require.NoError(t, s.Restart(ctx), "a killed server starts again")
	require.True(t, s.Running())

	require.NoError(t, s.Pause())
	require.NoError(t, s.Restart(ctx), "a paused server is killed and started again")
	v, err := s.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
	require.NoError(t, s.Resume(), "the new process is not paused")
}

func TestRestartCanceledOrClosed(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.RestartAfter(ctx, time.Hour)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "stays down")
	require.False(t, s.Running())

	require.NoError(t, s.Close())
	require.Error(t, s.Restart(t.Context()), "a closed server cannot restart")
	require.False(t, s.Running())
}

func TestRestartAfterHoldsThePort(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	done := make(chan error, 1)
	go func() { done <- s.RestartAfter(t.Context(), 500*time.Millisecond) }()
	require.Eventually(t, func() bool { return !s.Running() }, 5*time.Second, time.Millisecond)

	_, err := net.Listen("tcp", s.Addr())
	require.Error(t, err, "no one else can take the port while the server is down")
	pingCtx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = s.Do(pingCtx, "PING")
	cancel()
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "a client is turned away at once, as by a dead server")

	require.NoError(t, <-done)
	v, err := s.Do(t.Context(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}

func TestUnread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Unread reads /proc/net/tcp")
	}
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []redistest.Option
	}{{"127.0.0.1", nil}, {"::1", []redistest.Option{redistest.WithIPv6()}}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts != nil {
				redistest.SkipWithoutIPv6(t)
			}
			t.Parallel()
			s := redistest.NewServer(t, tc.opts...)
			n, err := s.Unread()
			require.NoError(t, err)
			require.Zero(t, n)

			require.NoError(t, s.Pause())
			c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
			require.NoError(t, err)
			defer c.Close()
			const cmd = "*1\r\n$4\r\nPING\r\n"
			_, err = c.Write([]byte(cmd))
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				n, err := s.Unread()
				return err == nil && n == len(cmd)
			}, 5*time.Second, time.Millisecond, "a request queued at a paused server")

			require.NoError(t, s.Resume())
			require.Eventually(t, func() bool {
				n, err := s.Unread()
				return err == nil && n == 0
			}, 5*time.Second, time.Millisecond, "read once resumed")
		})
	}
}

func TestUnreadAfterClientClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Unread reads /proc/net/tcp")
	}
	t.Parallel()
	s := redistest.NewServer(t)
	require.NoError(t, s.Pause())
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	require.NoError(t, err)
	const cmd = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	_, err = c.Write([]byte(cmd))
	require.NoError(t, err)
	require.NoError(t, c.Close()) // the client gives up; the request stays queued
	require.Eventually(t, func() bool {
		n, err := s.Unread()
		return err == nil && n == len(cmd)
	}, 5*time.Second, time.Millisecond)

	require.NoError(t, s.Resume())
	require.Eventually(t, func() bool {
		v, err := s.Do(t.Context(), "GET", "k")
		return err == nil && v == "v"
	}, 5*time.Second, time.Millisecond, "the resumed server executes the request of the client that left")
}

// Close during RestartAfter's down time ends the wait: RestartAfter returns
// that the server is closed, not once the down time has passed (an hour
// here), with a context that never ends.
func TestRestartAfterClosedDuringDownTime(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	done := make(chan error, 1)
	go func() { done <- s.RestartAfter(context.Background(), time.Hour) }()
	require.Eventually(t, func() bool { return !s.Running() }, time.Minute, time.Millisecond, "RestartAfter kills the server first")
	require.NoError(t, s.Close())
	select {
	case err := <-done:
		require.ErrorContains(t, err, "server is closed")
		require.ErrorContains(t, err, "stays down")
	case <-time.After(time.Minute): // a bound, far below the hour of down time
		t.Fatal("RestartAfter still waits out its down time after Close")
	}
	require.False(t, s.Running())
}
