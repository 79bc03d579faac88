package redisserver

import (
	"errors"
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// newUnstarted returns a Server on port that has not been launched yet, or
// skips the test if redis-server is missing.
func newUnstarted(t *testing.T, port int) *Server {
	t.Helper()
	bin, err := findServer()
	if err != nil {
		startFailed(t, err)
	}
	dir := t.TempDir()
	return &Server{bin: bin, port: port, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
}

func TestLaunchPortTaken(t *testing.T) {
	t.Parallel()
	t.Run("by a listener", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		s := newUnstarted(t, l.Addr().(*net.TCPAddr).Port)
		s.mu.Lock()
		err = s.launchLocked(t.Context())
		s.mu.Unlock()
		require.ErrorIs(t, err, errPortInUse)
		require.Nil(t, s.proc)
		t.Log(err)
	})
	t.Run("by another redis-server", func(t *testing.T) {
		t.Parallel()
		other := NewServer(t)
		s := newUnstarted(t, other.port)
		s.mu.Lock()
		err := s.launchLocked(t.Context())
		s.mu.Unlock()
		require.ErrorIs(t, err, errPortInUse, "must not take the other server's PONG for its own")
		require.Nil(t, s.proc)
	})
}

func TestStartCleansUpOnFailure(t *testing.T) {
	NewServer(t) // skips the test if redis-server is missing
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // Start's directories go here
	_, err := Start(t.Context(), WithConfig("no-such-directive", "x"))
	require.Error(t, err)
	require.False(t, errors.Is(err, errPortInUse))
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries, "the failed server's directory is removed")
}
