package rueidiscoretest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// HungShard checks a node of d's Open over a Redis Cluster of two shards
// when one shard's primary hangs (paused: it takes connections and never
// answers, as a frozen host does) after the node connected: the calls on
// the keys of the other shard go on succeeding, each within its context,
// while those on the hung shard's keys fail by theirs, with an error that
// names the hung shard's primary.
func HungShard(t *testing.T, d driver.Driver) {
	c := redistest.NewCluster(t, 2)
	healthy, hung := c.Shards()[0], c.Shards()[1]
	keyOn := func(s *redistest.Shard, i int) string { return keyOnShard(c, s, i) }
	n, err := d.Open(c.URL())
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	for _, s := range []*redistest.Shard{healthy, hung} { // connected to both
		ok, err := n.SetNX(testContext(t, 10*time.Second), keyOn(s, 0), "v", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, hung.Primary().Pause())
	t.Cleanup(func() { hung.Primary().Resume() })
	succeeded := 0
	for i := range 10 {
		start := time.Now()
		_, err := n.SetNX(testContext(t, 200*time.Millisecond), keyOn(hung, i+1), "v", time.Minute)
		require.Error(t, err, "SET NX on the hung shard")
		require.ErrorContains(t, err, "primary "+hung.Primary().Addr()+":", "the error names the shard that failed")
		require.Less(t, time.Since(start), 700*time.Millisecond, "SET NX %d on the hung shard, with 200ms", i)
		start = time.Now()
		ok, err := n.SetNX(testContext(t, 500*time.Millisecond), keyOn(healthy, i+1), "v", time.Minute)
		require.Less(t, time.Since(start), time.Second, "SET NX %d on the healthy shard, with 500ms", i)
		if err == nil && ok {
			succeeded++
		} else {
			t.Logf("SET NX %d on the healthy shard: %v, %v", i, ok, err)
		}
	}
	require.Equal(t, 10, succeeded, "SET NX on the healthy shard while the other hangs")
}

// ShardFailover checks a node of d's Open over a Redis Cluster of three
// shards, each with a replica, when one shard's primary dies after the node
// connected: the other shard's keys go on being locked throughout, and once
// the cluster has promoted the replica (cluster-node-timeout 1s; and
// cluster-require-full-coverage no, or no shard would answer meanwhile), the dead
// shard's keys are locked again through the node, within a few seconds.
func ShardFailover(t *testing.T, d driver.Driver) {
	c := redistest.NewCluster(t, 3, redistest.WithReplicas(1), // a majority of primaries left, which a failover needs
		redistest.WithServerOptions(redistest.WithConfig("cluster-node-timeout", "1000"),
			// The other shards answer while this one has no primary.
			redistest.WithConfig("cluster-require-full-coverage", "no")))
	healthy, dying := c.Shards()[0], c.Shards()[1]
	keyOn := func(s *redistest.Shard, i int) string { return keyOnShard(c, s, i) }
	n, err := d.Open(c.URL())
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	for _, s := range []*redistest.Shard{healthy, dying} {
		ok, err := n.SetNX(testContext(t, 10*time.Second), keyOn(s, 0), "v", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, dying.Primary().Kill())
	killed := time.Now()
	for i := 1; ; i++ {
		ok, err := n.SetNX(testContext(t, 500*time.Millisecond), keyOn(healthy, i), "v", time.Minute)
		require.NoError(t, err, "SET NX %d on the healthy shard", i)
		require.True(t, ok)
		start := time.Now()
		ok, err = n.SetNX(testContext(t, 200*time.Millisecond), keyOn(dying, i), "v", time.Minute)
		require.Less(t, time.Since(start), 700*time.Millisecond, "SET NX %d on the shard that failed over, with 200ms", i)
		if err == nil && ok {
			t.Logf("the shard's keys are locked again %v after its primary died", time.Since(killed).Round(time.Millisecond))
			return
		}
		require.Less(t, time.Since(killed), 20*time.Second, "the shard's keys after its failover: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
}

// keyOnShard returns the i-th key of a series whose slots s serves on c.
func keyOnShard(c *redistest.Cluster, s *redistest.Shard, i int) string {
	return c.KeyOn(s, fmt.Sprintf("shard-key-%d-", i))
}

// FirstUseShardDown checks a node of d's Open over a Redis Cluster of two
// shards whose first call comes while one shard's primary is down: dead
// (killed, no replica) or hung (paused): the other shard's keys are locked,
// and the down shard's fail, each call within its context.
func FirstUseShardDown(t *testing.T, d driver.Driver) {
	for _, how := range []string{"dead", "hung"} {
		t.Run(how, func(t *testing.T) {
			c := redistest.NewCluster(t, 2, redistest.WithServerOptions(
				// The other shard answers while this one has no primary.
				redistest.WithConfig("cluster-require-full-coverage", "no")))
			healthy, down := c.Shards()[0], c.Shards()[1]
			if how == "dead" {
				require.NoError(t, down.Primary().Kill())
			} else {
				require.NoError(t, down.Primary().Pause())
				t.Cleanup(func() { down.Primary().Resume() })
			}
			// The seed is the healthy primary alone: the slot map comes from it.
			n, err := d.Open("redis://" + healthy.Primary().Addr() + "?cluster=true")
			require.NoError(t, err)
			t.Cleanup(func() { n.Close() })
			for i := range 5 {
				start := time.Now()
				ok, err := n.SetNX(testContext(t, 2*time.Second), keyOnShard(c, healthy, i), "v", time.Minute)
				require.NoError(t, err, "SET NX %d on the healthy shard", i)
				require.True(t, ok)
				require.Less(t, time.Since(start), 2500*time.Millisecond)
				start = time.Now()
				_, err = n.SetNX(testContext(t, 200*time.Millisecond), keyOnShard(c, down, i), "v", time.Minute)
				require.Error(t, err, "SET NX %d on the shard down", i)
				require.Less(t, time.Since(start), 700*time.Millisecond, "SET NX %d on the shard down, with 200ms", i)
			}
		})
	}
}
