package goredis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// A cluster node first used while one of its seeds hangs (a shard's primary,
// paused): go-redis asks the seeds for the slot map one after the other, in
// random order, under the call's one context, so a call whose read asks the
// hung seed first spends its whole network timeout there and fails, unsent;
// no option of go-redis bounds each seed's read (see doc.go). That failure
// has the client reload the map in the background (see reloader), without
// the call's deadline, each seed's read bounded by the client's ReadTimeout,
// so the reload goes on to the other seeds and the client has the map a few
// seconds later: from then on no call reads it, and every call on the
// healthy shards' keys succeeds, whatever seed a read would have asked first.
// The first calls wait too for the check that the seeds are of one cluster
// (clusterseeds), which asks every seed at once, each up to the dial timeout:
// with a hung seed, they fail by their contexts until it ends.
func TestClusterFirstUseHungSeed(t *testing.T) {
	c := redistest.NewCluster(t, 3)
	hung := c.Shards()[2]
	keyOn := func(s *redistest.Shard, prefix string, i int) string {
		for j := 0; ; j++ {
			if k := fmt.Sprintf("%s-%d-%d", prefix, i, j); c.SlotShard(redistest.KeySlot(k)) == s {
				return k
			}
		}
	}
	healthy := c.Shards()[0]
	check := redis.NewClient(&redis.Options{Addr: healthy.Primary().Addr()})
	t.Cleanup(func() { check.Close() })
	require.NoError(t, hung.Primary().Pause())
	t.Cleanup(func() { hung.Primary().Resume() }) // first: the reads left behind end
	url := "redis://" + hung.Primary().Addr() + "?cluster=true&addr=" + c.Shards()[0].Primary().Addr() + "&addr=" + c.Shards()[1].Primary().Addr()
	call := func(n driver.Node, key string) (bool, error) {
		const d = 300 * time.Millisecond
		ctx, cancel := context.WithTimeout(driver.WithNetworkTimeout(t.Context(), d), d)
		defer cancel()
		return n.SetNX(ctx, key, "v", time.Minute)
	}
	// Fresh nodes until one's first read asks the hung seed first (one in
	// three does).
	var n *node
	for i := 0; n == nil; i++ {
		require.Less(t, i, 60, "no first call failed in 60 fresh nodes: is the seed hung?")
		dn, err := Driver{}.Open(url)
		require.NoError(t, err)
		t.Cleanup(func() { dn.Close() })
		key := keyOn(healthy, fmt.Sprint("first-", i), i)
		ok, err := call(dn, key)
		if err == nil {
			require.True(t, ok)
			continue
		}
		t.Logf("node %d: the first call failed: %v", i, err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.False(t, dn.(*node).shards.known.Load(), "a failed read leaves no map")
		exists, err := check.Exists(t.Context(), key).Result()
		require.NoError(t, err)
		require.Zero(t, exists, "the failed call was sent")
		n = dn.(*node)
	}
	// The background reload gets the map from another seed: MasterForKey
	// with a context already done answers from the map alone. And the
	// check that the seeds are of one cluster (clusterseeds), which waits
	// for every seed up to the dial timeout, ends: the hung seed is then
	// left to the dial gate, which go-redis meets only if it reads the map
	// from that seed.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	require.Eventually(t, func() bool {
		_, err := n.shards.client.MasterForKey(done, "k")
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the background reload never got the slot map")
	require.Eventually(t, func() bool { return n.seeds.Check(done) == nil },
		30*time.Second, 50*time.Millisecond, "the seeds' check never ended")
	for i := range 10 {
		ok, err := call(n, keyOn(healthy, "after", i))
		require.NoError(t, err, "call %d once the client has the map", i)
		require.True(t, ok)
	}
}
