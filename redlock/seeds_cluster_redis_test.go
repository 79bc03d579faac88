package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	_ "github.com/go-redlock/redlock/drivers/goredis"
	_ "github.com/go-redlock/redlock/drivers/rueidis"
	_ "github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/seedstest"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A node given as a Redis Cluster whose seeds are nodes of two clusters is
// refused by every cluster driver: the clients read the slot map from a
// seed taken at random, so Clients of that one address locked on either
// cluster, and the lock was granted to one Client on each (before the
// check, 12 Clients of the address tried the lock, none releasing it, and
// more than one got it). Now every Client's TryLock fails with an error
// that names the two seeds and that retrying cannot fix, Lock stops at once
// rather than wait for its context, and the other Clients (of the cluster's
// right address) lock as before. The normal case still works: seeds of one
// cluster, one of them a replica and one that does not answer
// (seedstest.TwoClusters).
func TestClusterNodeSeedsOfTwoClusters(t *testing.T) {
	a := redistest.NewCluster(t, 2, redistest.WithReplicas(1))
	b := redistest.NewCluster(t, 1)
	for _, name := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			seedstest.TwoClusters(t, a, b, "seeds-"+name, func(seeds ...string) *redlock.Client {
				addr := "redis://" + seeds[0] + "?cluster=true&addr=" + strings.Join(seeds[1:], "&addr=")
				c, err := redlock.Open(name, []string{addr},
					redlock.WithTTL(30*time.Second), redlock.WithNodeTimeout(2*time.Second))
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				return c
			})
		})
	}
}

// A seed of another cluster that was down when the node checked its seeds
// (skipped then, as the clients skip it) comes back: rueidis and valkey-go
// keep their seeds among the servers they ask for the slot map on every
// refresh, and would then lock on whichever cluster answered first. The
// node asks the seed before the client may connect to it, and refuses from
// then on; no TryLock through it is granted while a Client of the first
// cluster holds the lock. (go-redis asks its seeds again only once every node of its map
// failed, through the same check.) Before the check, the refreshes that
// slot moves cause never refused the node.
func TestClusterNodeLateSeedOfAnotherCluster(t *testing.T) {
	a := redistest.NewCluster(t, 2)
	b := redistest.NewCluster(t, 1)
	late := b.Shards()[0].Primary()
	mixed := "redis://" + a.Seeds()[0] + "?cluster=true&addr=" + a.Seeds()[1] + "&addr=" + b.Seeds()[0]
	opts := []redlock.Option{redlock.WithTTL(30 * time.Second), redlock.WithNodeTimeout(2 * time.Second)}
	for _, name := range []string{"rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, late.Kill())
			c, err := redlock.Open(name, []string{mixed}, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			key := "late-seed-" + name
			l, err := c.TryLock(t.Context(), key)
			require.NoError(t, err, "the seed of the other cluster down: the node locks on the first")
			require.NoError(t, l.Unlock(t.Context()))
			require.NoError(t, late.Restart(t.Context()))
			// A slot that moves has the client refresh its map (MOVED).
			slot := redistest.KeySlot(key)
			require.NoError(t, a.MigrateSlot(t.Context(), slot, a.Shards()[(a.SlotShard(slot).Index()+1)%2]))
			holder, err := redlock.Open(name, []string{a.URL()}, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { holder.Close() })
			held, err := holder.TryLock(t.Context(), key)
			require.NoError(t, err)
			var last error
			require.Eventually(t, func() bool {
				_, err := c.TryLock(t.Context(), key)
				require.Error(t, err, "granted while a Client of the first cluster holds the lock")
				last = err
				return errors.Is(err, driver.ErrSeedsOfTwoClusters)
			}, 30*time.Second, 100*time.Millisecond, "the node was never refused once the other cluster's seed answered")
			require.Contains(t, last.Error(), b.Seeds()[0])
			require.NoError(t, held.Unlock(t.Context()))
		})
	}
}
