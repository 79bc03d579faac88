// Package seedstest checks, for the tests of the cluster drivers, that a
// node whose seeds are nodes of two Redis Clusters is refused
// (driver.ErrSeedsOfTwoClusters) and one of one cluster's seeds is not. It is
// imported by test files alone, so it adds nothing to users' builds.
package seedstest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Open returns a new Client of one node, a Redis Cluster given by seeds,
// closed when the test ends.
type Open func(seeds ...string) *redlock.Client

// TwoClusters checks the refusal of a node whose seeds are nodes of two
// clusters: the clients read the slot map from a seed taken at random, so
// Clients of such a node locked on either cluster, and one lock was granted
// to a Client on each. 12 Clients of the seeds of a (two) and b (one) try
// key without releasing it: none is granted it, every error matches
// driver.ErrSeedsOfTwoClusters, is one that retrying cannot fix and names
// b's seed and one of a's; Lock stops at once rather than wait for its
// context. Then a's seeds lock as before, exclusively, also given with a
// replica of a and a seed that does not answer. a must have two shards or
// more, a replica for its first. TwoClusters returns the refusals, for the
// caller's own checks of them.
func TwoClusters(t *testing.T, a, b *redistest.Cluster, key string, open Open) []error {
	t.Helper()
	mixed := []string{a.Seeds()[0], a.Seeds()[1], b.Seeds()[0]}
	granted := 0
	var errs []error
	for range 12 {
		if _, err := open(mixed...).TryLock(t.Context(), key); err == nil {
			granted++
		} else {
			errs = append(errs, err)
		}
	}
	require.LessOrEqual(t, granted, 1, "Clients of the same seeds were granted one lock")
	require.Zero(t, granted, "a Client of a node whose seeds are of two clusters was granted the lock")
	for i, err := range errs {
		require.ErrorIs(t, err, driver.ErrSeedsOfTwoClusters, "Client %d", i)
		require.Equal(t, driver.ErrSeedsOfTwoClusters.Error(), driver.PermanentCode(err))
		require.Contains(t, err.Error(), b.Seeds()[0], "the error names the other cluster's seed")
		require.True(t, strings.Contains(err.Error(), a.Seeds()[0]) || strings.Contains(err.Error(), a.Seeds()[1]),
			"the error names a seed of the first cluster: %v", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := open(mixed...).Lock(ctx, key)
	require.ErrorIs(t, err, driver.ErrSeedsOfTwoClusters)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "Lock waited for its context: %v", err)

	// One cluster's seeds: the lock is granted, and exclusive, also to a
	// node given a replica and a dead seed beside a primary.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	held, err := open(a.Seeds()...).TryLock(t.Context(), key)
	require.NoError(t, err)
	oneCluster := []string{dead, a.Shards()[0].Replicas()[0].Addr(), a.Seeds()[1]}
	_, err = open(oneCluster...).TryLock(t.Context(), key)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NotErrorIs(t, err, driver.ErrSeedsOfTwoClusters)
	require.NoError(t, held.Unlock(t.Context()))
	l, err := open(oneCluster...).TryLock(t.Context(), key)
	require.NoError(t, err, "seeds of one cluster, one a replica and one dead")
	require.NoError(t, l.Unlock(t.Context()))
	return errs
}
