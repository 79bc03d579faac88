package goredis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A node of New over a *redis.ClusterClient of the caller's whose seeds
// (ClusterOptions.Addrs) are nodes of two clusters is refused, as one of
// Open's is (driver.ErrSeedsOfTwoClusters): go-redis reads the slot map from
// a seed taken at random, so Clients over such clients locked on either
// cluster, and one lock was granted to a Client on each. 12 Clients, each
// over a fresh client of the three seeds (two of a password-protected
// cluster of two shards, one of another cluster with the same password),
// try one key without releasing it: before the check, more than one was
// granted it. Now none is, every error names the other cluster's seed and
// is one that retrying cannot fix, so Lock stops at once. A client of one
// cluster's seeds, one of them a replica and one dead, locks as before.
func TestNewClusterClientSeedsOfTwoClusters(t *testing.T) {
	pw := redistest.WithServerOptions(redistest.WithPassword("s3cret"))
	a := redistest.NewCluster(t, 2, redistest.WithReplicas(1), pw)
	b := redistest.NewCluster(t, 1, pw)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()
	open := func(seeds ...string) *redlock.Client {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Password: "s3cret",
			ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { cc.Close() })
		c, err := redlock.New([]driver.Node{goredis.New(cc)},
			redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(2*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	mixed := []string{a.Seeds()[0], a.Seeds()[1], b.Seeds()[0]}
	const key = "new-seeds"
	granted := 0
	var errs []error
	for range 12 {
		if _, err := open(mixed...).TryLock(t.Context(), key); err == nil {
			granted++
		} else {
			errs = append(errs, err)
		}
	}
	require.LessOrEqual(t, granted, 1, "Clients over clients of the same seeds were granted one lock")
	require.Zero(t, granted, "a Client over a client whose seeds are of two clusters was granted the lock")
	for i, err := range errs {
		require.ErrorIs(t, err, driver.ErrSeedsOfTwoClusters, "Client %d", i)
		require.Equal(t, driver.ErrSeedsOfTwoClusters.Error(), driver.PermanentCode(err))
		require.Contains(t, err.Error(), b.Seeds()[0], "the error names the other cluster's seed")
		require.True(t, strings.Contains(err.Error(), a.Seeds()[0]) || strings.Contains(err.Error(), a.Seeds()[1]),
			"the error names a seed of the first cluster: %v", err)
		require.NotContains(t, err.Error(), "s3cret")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = open(mixed...).Lock(ctx, key)
	require.ErrorIs(t, err, driver.ErrSeedsOfTwoClusters)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "Lock waited for its context: %v", err)

	// One cluster's seeds: the lock is granted, and exclusive, also over a
	// client given a replica and a dead seed beside a primary.
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
}
