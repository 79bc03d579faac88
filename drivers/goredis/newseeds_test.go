package goredis_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/internal/seedstest"
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
// granted it. Now none is, every error names the other cluster's seed,
// without the password, and is one that retrying cannot fix, so Lock stops
// at once. A client of one cluster's seeds, one of them a replica and one
// dead, locks as before (seedstest.TwoClusters).
func TestNewClusterClientSeedsOfTwoClusters(t *testing.T) {
	t.Parallel()
	pw := redistest.WithServerOptions(redistest.WithPassword("s3cret"))
	a := redistest.NewCluster(t, 2, redistest.WithReplicas(1), pw)
	b := redistest.NewCluster(t, 1, pw)
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
	for _, err := range seedstest.TwoClusters(t, a, b, "new-seeds", open) {
		require.NotContains(t, err.Error(), "s3cret")
	}
}
