package redistest_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

func TestServerRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, s.Addr())
	require.NotEqual(t, "127.0.0.1:6379", s.Addr())
	require.Equal(t, "redis://"+s.Addr(), s.URL())

	v, err := s.Do(ctx, "SET", "k", "v", "PX", "10000")
	require.NoError(t, err)
	require.Equal(t, "OK", v)

	v, err = s.Do(ctx, "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "v", v)

	v, err = s.Do(ctx, "PTTL", "k")
	require.NoError(t, err)
	require.IsType(t, int64(0), v)
	require.Greater(t, v.(int64), int64(0))
	require.LessOrEqual(t, v.(int64), int64(10000))
}

func TestServerDefaults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	for name, want := range map[string]string{
		"bind":       "127.0.0.1",
		"save":       "",
		"appendonly": "no",
		"daemonize":  "no",
	} {
		v, err := s.Do(ctx, "CONFIG", "GET", name)
		require.NoError(t, err)
		require.Equal(t, []any{name, want}, v, name)
	}
}

func TestWithConfig(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t,
		redistest.WithConfig("appendonly", "yes"),
		redistest.WithConfig("--maxmemory-policy", "allkeys-lru"),
		redistest.WithConfig("save", "60", "1"),
	)
	for name, want := range map[string]string{
		"appendonly":       "yes",
		"maxmemory-policy": "allkeys-lru",
		"save":             "60 1",
	} {
		v, err := s.Do(ctx, "CONFIG", "GET", name)
		require.NoError(t, err)
		require.Equal(t, []any{name, want}, v, name)
	}
}

func TestWithConfigInvalid(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, opt := range []redistest.Option{
		redistest.WithConfig(),
		redistest.WithConfig("port", "6379"),
		redistest.WithConfig("BIND", "0.0.0.0"),
		redistest.WithConfig("requirepass", "x"),
		redistest.WithConfig("appendonly yes"),
	} {
		s, err := redistest.Start(ctx, opt)
		require.Error(t, err)
		require.Nil(t, s)
		require.Contains(t, err.Error(), "WithConfig")
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	t.Parallel()
	redistest.NewServer(t) // skips the test if redis-server is missing
	s, err := redistest.Start(t.Context(), redistest.WithConfig("maxmemory-policy", "no-such-policy"))
	require.Error(t, err)
	require.Nil(t, s)
	require.Contains(t, err.Error(), "exited before it was ready")
	require.Contains(t, err.Error(), "maxmemory-policy") // from redis-server's own output
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	require.NoError(t, s.Pause())
	require.NoError(t, s.Pause(), "pausing twice")

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Do(ctx, "PING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)

	require.NoError(t, s.Resume())
	require.NoError(t, s.Resume(), "resuming twice")
	v, err := s.Do(t.Context(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}

func TestDoCanceled(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	require.NoError(t, s.Pause())
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := s.Do(ctx, "PING")
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, s.Resume())
}

func TestCloseWhilePaused(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	require.NoError(t, s.Pause())
	start := time.Now()
	require.NoError(t, s.Close())
	require.Less(t, time.Since(start), 2*time.Second, "Close should resume and stop a paused server, not wait for SIGKILL")
}

func TestKill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t)
	dir := serverDir(t, s)

	require.NoError(t, s.Kill())
	_, err := s.Do(ctx, "PING")
	require.Error(t, err)
	require.NoError(t, s.Kill(), "killing twice")
	require.Error(t, s.Pause())
	require.Error(t, s.Resume())

	require.DirExists(t, dir, "Kill keeps the directory")
	require.NoError(t, s.Close())
	require.NoDirExists(t, dir)
}

func TestCloseIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := redistest.Start(ctx)
	if err != nil {
		redistest.NewServer(t) // skips or fails the test with the install hint
		require.NoError(t, err)
	}
	dir := serverDir(t, s)
	require.DirExists(t, dir)

	require.NoError(t, s.Close())
	require.NoDirExists(t, dir)
	require.NoError(t, s.Close())

	_, err = s.Do(ctx, "PING")
	require.Error(t, err)
	require.Error(t, s.Pause())
	require.NoError(t, s.Kill())
}

func TestNewServers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	servers := redistest.NewServers(t, 3)
	require.Len(t, servers, 3)
	addrs := redistest.Addrs(servers)
	require.Len(t, addrs, 3)
	seen := map[string]bool{}
	for i, s := range servers {
		require.Equal(t, s.Addr(), addrs[i])
		require.False(t, seen[s.Addr()], "duplicate address %s", s.Addr())
		seen[s.Addr()] = true
		v, err := s.Do(ctx, "PING")
		require.NoError(t, err)
		require.Equal(t, "PONG", v)
	}
	// The servers are independent.
	_, err := servers[0].Do(ctx, "SET", "only-on-0", "x")
	require.NoError(t, err)
	v, err := servers[1].Do(ctx, "GET", "only-on-0")
	require.NoError(t, err)
	require.Nil(t, v)

	require.Empty(t, redistest.NewServers(t, 0))

	// Options are shared by the servers started in parallel.
	servers = redistest.NewServers(t, 2, redistest.WithPassword("pw"), redistest.WithConfig("--appendonly", "yes"))
	for _, s := range servers {
		v, err := s.Do(ctx, "CONFIG", "GET", "appendonly")
		require.NoError(t, err)
		require.Equal(t, []any{"appendonly", "yes"}, v)
	}
}

// serverDir returns the server's working directory, as redis-server reports it.
func serverDir(t *testing.T, s *redistest.Server) string {
	t.Helper()
	v, err := s.Do(t.Context(), "CONFIG", "GET", "dir")
	require.NoError(t, err)
	require.Len(t, v, 2)
	dir := v.([]any)[1].(string)
	require.DirExists(t, dir)
	require.NotEqual(t, os.TempDir(), dir)
	return dir
}

// A value after a directive's first that starts with "--" is refused:
// redis-server reads it as the name of another directive, which would set a
// managed one (here requirepass, bind, dir) past WithConfig's check. A first
// value that starts with "--" is a value to redis-server, and still accepted.
func TestWithConfigValueNamesDirective(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, opt := range []redistest.Option{
		redistest.WithConfig("appendonly", "yes", "--requirepass", "x"),
		redistest.WithConfig("save", "60", "1", "--bind", "::1"),
		redistest.WithConfig("masterauth", "x", "--dir", "/"),
	} {
		s, err := redistest.Start(ctx, opt)
		if s != nil {
			s.Close()
		}
		require.Error(t, err)
		require.Nil(t, s)
		require.Contains(t, err.Error(), "WithConfig")
		require.Contains(t, err.Error(), `starts with "--"`)
	}
	s := redistest.NewServer(t, redistest.WithConfig("masterauth", "--x"), redistest.WithPassword("--pw"))
	for name, want := range map[string]string{"masterauth": "--x", "requirepass": "--pw"} {
		v, err := s.Do(ctx, "CONFIG", "GET", name)
		require.NoError(t, err)
		require.Equal(t, []any{name, want}, v, name)
	}
}

// WithConfig refuses include: the included file's directives would be read
// after redistest's own, and could set the managed ones (here port; the
// system's redis.conf sets port 6379 and daemonize yes, whose daemon would
// outlive the test).
func TestWithConfigInclude(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "extra.conf")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(conf, []byte("port "+strconv.Itoa(port)+"\n"), 0o600))
	for _, name := range []string{"include", "INCLUDE"} {
		s, err := redistest.Start(t.Context(), redistest.WithConfig(name, conf))
		if s != nil {
			s.Close()
		}
		require.Error(t, err)
		require.Nil(t, s)
		require.Contains(t, err.Error(), "WithConfig")
		require.Contains(t, err.Error(), name)
	}
}
