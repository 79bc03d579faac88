package redlock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The README's account of a cluster node with one shard down (its primary
// dead, no replica): the other shards' keys are locked until the cluster
// marks the shard failed (cluster-node-timeout, 1s here); from then on, under
// Redis' default cluster-require-full-coverage yes, every shard answers
// CLUSTERDOWN and the node locks nothing, while with
// cluster-require-full-coverage no the other shards' keys are still locked.
// The README said that the node kept serving the other shards' keys,
// whatever the driver, with no word of the setting (found in an outside
// review, R8): every driver's TryLock of a live shard's key failed with
// "CLUSTERDOWN The cluster is down" once the cluster saw the shard fail.
func TestClusterShardDownFullCoverage(t *testing.T) {
	for _, name := range []string{"goredis", "rueidis", "valkeygo"} {
		for _, full := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/full-coverage=%v", name, full), func(t *testing.T) {
				t.Parallel()
				opts := []redistest.Option{redistest.WithConfig("cluster-node-timeout", "1000")}
				if !full {
					opts = append(opts, redistest.WithConfig("cluster-require-full-coverage", "no"))
				}
				// Three shards: the two left are a majority of primaries,
				// which mark the dead one failed.
				c := redistest.NewCluster(t, 3, redistest.WithServerOptions(opts...))
				cl, err := redlock.Open(name, []string{c.URL()}, redlock.WithNodeTimeout(2*time.Second))
				require.NoError(t, err)
				defer cl.Close()
				live := c.Shards()[1]
				l, err := cl.TryLock(t.Context(), c.KeyOn(live, "coverage-before-"))
				require.NoError(t, err)
				require.NoError(t, l.Unlock(t.Context()))

				require.NoError(t, c.Shards()[0].Primary().Kill())
				require.Eventually(t, func() bool { // the cluster marked the dead primary failed
					v, err := live.Primary().Do(t.Context(), "CLUSTER", "NODES")
					return err == nil && strings.Contains(fmt.Sprint(v), " master,fail ")
				}, 20*time.Second, 20*time.Millisecond, "the cluster did not mark the dead primary failed")
				key := c.KeyOn(live, "coverage-after-")
				if full {
					require.Eventually(t, func() bool {
						_, err := cl.TryLock(t.Context(), key)
						return err != nil && strings.Contains(err.Error(), "CLUSTERDOWN")
					}, 10*time.Second, 50*time.Millisecond, "a live shard's key with another shard failed, full coverage required")
					return
				}
				l, err = cl.TryLock(t.Context(), key)
				require.NoError(t, err, "a live shard's key with another shard failed, full coverage not required")
				require.NoError(t, l.Unlock(t.Context()))
			})
		}
	}
}
