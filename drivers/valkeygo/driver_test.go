package valkeygo_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/rueidiscore/rueidiscoretest"
)

// The client a caller might configure, from a URL.
func TestDriver(t *testing.T) {
	rueidiscoretest.Run(t, "valkeygo", valkeygo.Driver{}, valkeygo.New, func(addr string) (valkey.Client, error) {
		opt := valkey.MustParseURL("redis://" + addr)
		opt.ForceSingleClient, opt.DisableCache, opt.DisableRetry = true, true, true
		return valkey.NewClient(opt)
	})
}

// New over a cluster client a caller configured.
func TestNewCluster(t *testing.T) {
	rueidiscoretest.RunCluster(t, valkeygo.New, func(seeds []string) (valkey.Client, error) {
		return valkey.NewClient(valkey.ClientOption{InitAddress: seeds, DisableCache: true, DisableRetry: true})
	})
}

// A cluster node of Open while one shard hangs.
func TestClusterHungShard(t *testing.T) { rueidiscoretest.HungShard(t, valkeygo.Driver{}) }

// A cluster node of Open while one shard fails over.
func TestClusterShardFailover(t *testing.T) { rueidiscoretest.ShardFailover(t, valkeygo.Driver{}) }

// A cluster node of Open first used while one shard is down.
func TestClusterFirstUseShardDown(t *testing.T) {
	rueidiscoretest.FirstUseShardDown(t, valkeygo.Driver{})
}

// A cluster node of Open whose first call fails while its client waits for a
// hung primary names the call.
func TestClusterFirstUseErrorNamesCall(t *testing.T) {
	rueidiscoretest.FirstUseErrorNamesCall(t, valkeygo.Driver{}, "valkeygo")
}

// Why New does not check a caller's cluster client by its Nodes(): they are
// always the nodes of one cluster (see the package documentation).
func TestNewClusterNodesOfOneMap(t *testing.T) {
	rueidiscoretest.NodesOfOneMap(t, func(t *testing.T, seeds []string) map[string]string {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: seeds, DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		defer c.Close()
		ids := map[string]string{}
		for addr, n := range c.Nodes() {
			id, err := n.Do(t.Context(), n.B().Arbitrary("CLUSTER", "MYID").Build()).ToString()
			require.NoError(t, err, "CLUSTER MYID on %s", addr)
			ids[addr] = id
		}
		return ids
	})
}
