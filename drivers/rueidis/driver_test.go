package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/internal/rueidiscore/rueidiscoretest"
)

func TestDriver(t *testing.T) {
	rueidiscoretest.Run(t, "rueidis", rueidisdriver.Driver{}, rueidisdriver.New, func(addr string) (rueidis.Client, error) {
		return rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true,
		})
	})
}

// New over a cluster client a caller configured.
func TestNewCluster(t *testing.T) {
	rueidiscoretest.RunCluster(t, rueidisdriver.New, func(seeds []string) (rueidis.Client, error) {
		return rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableCache: true, DisableRetry: true})
	})
}

// A cluster node of Open while one shard hangs.
func TestClusterHungShard(t *testing.T) { rueidiscoretest.HungShard(t, rueidisdriver.Driver{}) }

// A cluster node of Open while one shard fails over.
func TestClusterShardFailover(t *testing.T) { rueidiscoretest.ShardFailover(t, rueidisdriver.Driver{}) }

// A cluster node of Open first used while one shard is down.
func TestClusterFirstUseShardDown(t *testing.T) {
	rueidiscoretest.FirstUseShardDown(t, rueidisdriver.Driver{})
}

// A cluster node of Open whose first call fails while its client waits for a
// hung primary names the call.
func TestClusterFirstUseErrorNamesCall(t *testing.T) {
	rueidiscoretest.FirstUseErrorNamesCall(t, rueidisdriver.Driver{}, "rueidis")
}

// Why New does not check a caller's cluster client by its Nodes(): they are
// always the nodes of one cluster (see the package documentation).
func TestNewClusterNodesOfOneMap(t *testing.T) {
	rueidiscoretest.NodesOfOneMap(t, func(t *testing.T, seeds []string) map[string]string {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableCache: true, DisableRetry: true})
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
