package goredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// A cluster node opened while one shard's primary hangs (paused: it takes
// connections and never answers, as a frozen host does) locks the keys of
// the other shards, once it has the slot map (from a seed that answers: a
// hung seed holds up go-redis' first reading of the slot map, as it does
// every client's). go-redis' ClusterClient, before its first command, asked
// up to three random nodes for COMMAND (the commands' key positions for its
// routing policies), bounded by five seconds of its own rather than the
// caller's context and under a lock every command waits on: a hung shard
// picked first failed the SET of a key on a healthy shard (context deadline
// exceeded) on most new nodes, and every command of the node after it, until
// a COMMAND succeeded, on a node of Open or New alike. The node's commands
// now carry what go-redis read from COMMAND (their key step).
func TestClusterHungShardSparesOtherShards(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	healthy, hung := c.Shards()[0], c.Shards()[1]
	key := func(i int) string {
		for j := 0; ; j++ {
			if k := fmt.Sprintf("hung-shard-%d-%d", i, j); c.SlotShard(redistest.KeySlot(k)) == healthy {
				return k
			}
		}
	}
	require.NoError(t, hung.Primary().Pause())
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			// The healthy shard's primary alone as the seed: the slot
			// map comes from it.
			var n driver.Node
			if i%2 == 0 {
				var err error
				n, err = goredis.Driver{}.Open("redis://" + healthy.Primary().Addr() + "?cluster=true")
				if !assert.NoError(t, err) {
					return
				}
			} else { // a client of the user's, configured as New says
				cc := redis.NewClusterClient(&redis.ClusterOptions{
					Addrs:                 []string{healthy.Primary().Addr()},
					ContextTimeoutEnabled: true,
					MaxRetries:            -1,
				})
				defer cc.Close()
				n = goredis.New(cc)
			}
			defer n.Close()
			for j := range 3 {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				set, err := n.SetNX(ctx, key(i), "v", time.Minute)
				cancel()
				if !assert.NoError(t, err, "node %d, SET NX %d on a key of the healthy shard while the other hangs", i, j) || !assert.True(t, set) {
					return
				}
				ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second)
				released, err := n.EvalRelease(ctx, key(i), "v")
				cancel()
				if !assert.NoError(t, err, "node %d, release %d", i, j) || !assert.True(t, released) {
					return
				}
			}
		})
	}
	wg.Wait()
}
