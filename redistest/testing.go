package redistest

import (
	"errors"
	"net"
	"os"
	"sync"
	"testing"
)

// NewServer starts a server for a test with [Start] and closes it when the
// test ends. If redis-server is not installed it skips the test, or fails it
// when the CI environment variable is set (to anything but "false" or "0"),
// with [InstallHint]; any other start failure fails the test. Under go test
// -short it skips the test: real servers are for the full run.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	skipShort(tb)
	s, err := Start(tb.Context(), opts...)
	if err != nil {
		startFailed(tb, err)
		return nil
	}
	closeAtCleanup(tb, s)
	return s
}

// NewCerts generates Certs with [GenerateCerts] in a temporary directory that
// is removed when the test ends, and fails the test if that fails.
func NewCerts(tb testing.TB) *Certs {
	tb.Helper()
	c, err := GenerateCerts(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// NewServers starts n servers in parallel, as [NewServer] does one, for tests
// that need several independent Redis masters.
func NewServers(tb testing.TB, n int, opts ...Option) []*Server {
	tb.Helper()
	skipShort(tb)
	if n < 0 {
		tb.Fatalf("redistest: NewServers: n = %d < 0", n)
		return nil
	}
	servers, err := StartN(tb.Context(), n, opts...)
	if err != nil {
		startFailed(tb, err)
		return nil
	}
	for _, s := range servers {
		closeAtCleanup(tb, s)
	}
	return servers
}

// closeAtCleanup closes s when the test ends and reports a failure to close.
func closeAtCleanup(tb testing.TB, s *Server) {
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
}

// startFailed ends the test after a failed start: a skip if redis-server is
// missing outside CI, a failure otherwise.
func startFailed(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, ErrNotInstalled) && !inCI() {
		tb.Skip(err)
		return
	}
	tb.Fatal(err)
}

// inCI reports whether the tests run in continuous integration, where a
// missing redis-server is a failure rather than a reason to skip.
func inCI() bool {
	switch os.Getenv("CI") {
	case "", "false", "0":
		return false
	}
	return true
}

// NewCluster starts a cluster for a test with [StartCluster] and closes it
// when the test ends. If redis-server is not installed it skips the test, or
// fails it when the CI environment variable is set; any other start failure
// fails the test.
func NewCluster(tb testing.TB, shards int, opts ...ClusterOption) *Cluster {
	tb.Helper()
	skipShort(tb)
	c, err := StartCluster(tb.Context(), shards, opts...)
	if err != nil {
		startFailed(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// NewClusters starts n clusters of shards shards each in parallel, as
// [NewCluster] does one, for tests that need several independent nodes that
// are clusters. Call it from the test's goroutine, which it may end.
func NewClusters(tb testing.TB, n, shards int, opts ...ClusterOption) []*Cluster {
	tb.Helper()
	skipShort(tb)
	if n < 0 {
		tb.Fatalf("redistest: NewClusters: n = %d < 0", n)
		return nil
	}
	clusters := make([]*Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = StartCluster(tb.Context(), shards, opts...) })
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			tb.Cleanup(func() {
				if err := c.Close(); err != nil {
					tb.Error(err)
				}
			})
		}
	}
	if err := errors.Join(errs...); err != nil {
		startFailed(tb, err)
		return nil
	}
	return clusters
}

// skipShort skips a test that needs real servers under go test -short, the
// repository's fast loop (make check); make test runs them all.
func skipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("redistest: -short skips the tests that start redis-server")
	}
}

// SkipWithoutIPv6 skips the test if this machine cannot listen on the IPv6
// loopback address ::1 (a kernel or container without IPv6), which [WithIPv6]
// needs. It skips even when the CI environment variable is set: the machine,
// not the code under test, lacks it.
func SkipWithoutIPv6(tb testing.TB) {
	tb.Helper()
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		tb.Skipf("redistest: this machine cannot listen on ::1: %v", err)
	}
	_ = l.Close()
}
