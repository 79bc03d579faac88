package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A waiter in Lock over a node that is a Redis Cluster (every driver, New and
// Open), subscribed to its key's release, when its shard's primary hangs
// (paused: its connections stay open and nothing answers, as with a frozen
// host or a network that drops packets) and the cluster promotes the shard's
// replica: the README says that a subscription follows its channel "when a
// failover promotes a replica of its shard", and the waiter must hear the
// release published on the promoted replica well before its backoff (60s).
// A failover is what a primary that stops answering gets, hung as often as
// dead. The goredis driver's pub/sub connection waited on the hung primary
// for good (its Receive had no bound, and go-redis sends no PING on it), so
// the router never learned that it was lost: still subscribed there 30s
// after the promotion, and the waiter took the lock at its next poll; the
// rueidis family's clients PING their connections and moved in 4-15s.
//
// The subtests run in parallel: each waits mostly for its cluster (its
// start, the replica's sync, the failover).
func TestRedisClusterWaiterFollowsFailoverOfHungPrimary(t *testing.T) {
	for name, newNode := range clusterNodes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Three shards, so that two primaries are left to elect the
			// replica; a cluster node timeout of a second, so that the
			// failover takes seconds; the other shards keep answering.
			cl := redistest.NewCluster(t, 3, redistest.WithReplicas(1), redistest.WithServerOptions(
				redistest.WithConfig("cluster-node-timeout", "1000"),
				redistest.WithConfig("cluster-require-full-coverage", "no")))
			shard := cl.Shards()[0]
			key := cl.KeyOn(shard, "hung-failover-")
			channel := driver.ReleaseChannel(key)
			require.Equal(t, shard, cl.SlotShard(redistest.KeySlot(channel)))
			primary, replica := shard.Primary(), shard.Replicas()[0]
			// The key is held by another, and the replica has it.
			_, err := primary.Do(t.Context(), "SET", key, "someone", "PX", "120000")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				v, err := replica.Do(t.Context(), "DBSIZE") // a replica answers MOVED for the key itself
				return err == nil && v == int64(1)
			}, 20*time.Second, 10*time.Millisecond, "the replica does not have the key")

			c, err := redlock.New([]driver.Node{newNode(t, cl)}, redlock.WithTTL(time.Minute),
				redlock.WithNodeTimeout(time.Second), redlock.WithBackoff(redlock.ConstantBackoff(60*time.Second)))
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			got := goLock(ctx, c, key)
			require.Eventually(t, func() bool { return numsubOn(t, primary, channel) == 1 },
				10*time.Second, 10*time.Millisecond, "the waiter did not subscribe")
			// Its attempt once subscribed fails; the next is 60s away.
			time.Sleep(500 * time.Millisecond)

			require.NoError(t, primary.Pause())
			t.Cleanup(func() { primary.Resume() })
			require.Eventually(t, func() bool {
				v, err := replica.Do(t.Context(), "ROLE")
				return err == nil && strings.HasPrefix(fmt.Sprint(v), "[master")
			}, 20*time.Second, 10*time.Millisecond, "the replica was not promoted")
			promoted := time.Now()
			// The release, where the slot is served now (CLUSTERDOWN until
			// the promoted replica takes writes), announced every 500ms
			// until the waiter hears it.
			require.Eventually(t, func() bool {
				_, err := replica.Do(t.Context(), "DEL", key)
				return err == nil
			}, 10*time.Second, 10*time.Millisecond, "DEL on the promoted replica")
			for {
				_, err := replica.Do(t.Context(), "SPUBLISH", channel, "")
				require.NoError(t, err)
				select {
				case r := <-got:
					require.NoError(t, r.err)
					t.Logf("the waiter took the lock %v after the promotion", time.Since(promoted).Round(time.Millisecond))
					require.NoError(t, r.l.Unlock(t.Context()))
					return
				case <-time.After(500 * time.Millisecond):
				}
				// 30s: far below the backoff, room for a loaded machine.
				if time.Since(promoted) > 30*time.Second {
					t.Fatalf("the waiter heard no release 30s after its shard's replica was promoted over a hung primary (subscriptions on the promoted replica: %d)",
						numsubOn(t, replica, channel))
				}
			}
		})
	}
}
