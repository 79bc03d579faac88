package redistest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

func TestNotInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("NewServer skips every test under -short")
	}
	missing := filepath.Join(t.TempDir(), "no-such-redis-server")
	t.Setenv("REDISTEST_SERVER", missing)

	s, err := redistest.Start(t.Context())
	require.ErrorIs(t, err, redistest.ErrNotInstalled)
	require.Nil(t, s)
	require.Contains(t, err.Error(), redistest.InstallHint)
	require.Contains(t, err.Error(), missing)

	t.Run("skip outside CI", func(t *testing.T) {
		t.Setenv("CI", "")
		tb := runFake(func(tb testing.TB) { redistest.NewServer(tb) })
		require.True(t, tb.skipped)
		require.False(t, tb.failed)
		require.Contains(t, tb.msg, redistest.InstallHint)
	})
	t.Run("fail in CI", func(t *testing.T) {
		t.Setenv("CI", "true")
		tb := runFake(func(tb testing.TB) { redistest.NewServers(tb, 3) })
		require.False(t, tb.skipped)
		require.True(t, tb.failed)
		require.Contains(t, tb.msg, redistest.InstallHint)
	})
}

// fakeTB records how a test ended. Methods it does not define panic.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Context() context.Context { return context.Background() }
func (f *fakeTB) Cleanup(func())           {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.failed, f.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Sprintf(format, args...)) }

// runFake runs fn with a fakeTB on its own goroutine, as the testing package
// runs a test, and returns the fakeTB once fn has returned or ended the test.
func runFake(fn func(testing.TB)) *fakeTB {
	tb := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb
}
