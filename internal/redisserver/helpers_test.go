package redisserver

import (
	"errors"
	"testing"
)

// NewServer starts a server for an internal test and closes it at cleanup; it
// skips the test when redis-server is missing (package redistest's NewServer
// does the same for every other test).
func NewServer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := Start(t.Context(), opts...)
	if err != nil {
		startFailed(t, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// NewCluster starts a cluster for an internal test and closes it at cleanup.
func NewCluster(t *testing.T, shards int, opts ...ClusterOption) *Cluster {
	t.Helper()
	c, err := StartCluster(t.Context(), shards, opts...)
	if err != nil {
		startFailed(t, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func startFailed(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	t.Fatal(err)
}
