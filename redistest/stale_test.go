//go:build linux

package redistest_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// A test binary that go test -timeout ends runs no cleanup: the directory of
// every server it started is left behind. A later Start, in another process,
// removes it, and leaves alone the directory of a server still running.
func TestStaleDirRemoved(t *testing.T) {
	if os.Getenv("REDISTEST_STALE_HELPER") != "" {
		t.Skip("helper")
	}
	live := redistest.NewServer(t)
	liveDir := serverDir(t, live)

	// The first helper starts a server, prints its directory and hangs until
	// its -test.timeout panics.
	out, err := helper("1s", "hang")
	require.Error(t, err, "the helper should die of its timeout")
	require.Contains(t, out, "test timed out")
	dir := helperDir(t, out)
	require.DirExists(t, dir, "the timed-out helper leaves its server directory")
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(dir, old, old))
	require.NoError(t, os.Chtimes(liveDir, old, old))

	// The second helper only starts a server, and closes it.
	out, err = helper("30s", "close")
	require.NoError(t, err, out)
	require.NoDirExists(t, dir, "a later Start removes the stale server directory")
	require.DirExists(t, liveDir, "a running server's directory is kept")
	_, err = live.Do(t.Context(), "PING")
	require.NoError(t, err)
}

// helper runs TestStaleDirHelper in a new test binary process with mode.
func helper(timeout, mode string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleDirHelper$", "-test.v", "-test.timeout="+timeout)
	cmd.Env = append(os.Environ(), "REDISTEST_STALE_HELPER="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helperDir returns the directory the helper printed.
func helperDir(t *testing.T, out string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if _, dir, ok := strings.Cut(sc.Text(), "DIR="); ok {
			return strings.TrimSpace(dir)
		}
	}
	t.Fatalf("no DIR= in the helper's output:\n%s", out)
	return ""
}

func TestStaleDirHelper(t *testing.T) {
	mode := os.Getenv("REDISTEST_STALE_HELPER")
	if mode == "" {
		t.Skip("run by TestStaleDirRemoved")
	}
	s := redistest.NewServer(t)
	t.Logf("DIR=%s", serverDir(t, s))
	if mode == "hang" {
		select {}
	}
}
