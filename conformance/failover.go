package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// failoverRecovery bounds how long a cluster node may take, after a failover
// promoted a shard's replica, to lock keys of the shard and hear their
// releases again. The client's periodic reload of its slot map (a minute
// for go-redis) must not be what it waits for.
const failoverRecovery = 10 * time.Second

// clusterFailover kills the primary of a shard of a cluster whose shards
// have a replica each, and checks that a node opened and used before it
// locks keys of the shard (Locks) soon after the replica was promoted. Three shards, so
// that a majority of primaries is left to elect the replica; a cluster node
// timeout of a second, so that the failover takes seconds.
func clusterFailover(t *testing.T, ctx context.Context, s *redisSuite) {
	c := redistest.NewCluster(t, 3, redistest.WithReplicas(1),
		redistest.WithServerOptions(redistest.WithConfig("cluster-node-timeout", "1000")))
	shard := c.Shards()[0]
	onShard := func(t *testing.T, prefix string) string {
		t.Helper()
		for range 10000 {
			if k := key(t) + ":" + prefix; c.SlotShard(redistest.KeySlot(k)) == shard {
				return k
			}
		}
		t.Fatal("no key found on the shard")
		return ""
	}
	// A node that knows the shard's primary: it has locked a key there.
	locker := s.openURL(t, c.URL())
	if k, v := onShard(t, "before"), value(); must(t, "SetNX before the failover")(locker.SetNX(ctx, k, v, time.Minute)) {
		must(t, "EvalRelease before the failover")(locker.EvalRelease(ctx, k, v))
	}

	// Fail the primary over.
	promoted := shard.Replicas()[0]
	if err := shard.Primary().Kill(); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; {
		if role, err := promoted.Do(ctx, "ROLE"); err == nil && strings.HasPrefix(fmt.Sprint(role), "[master") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the replica was not promoted in %v after its primary was killed", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Run("Locks", func(t *testing.T) {
		start := time.Now()
		var last error
		for time.Since(start) < failoverRecovery {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			set, err := locker.SetNX(cctx, onShard(t, "after"), value(), time.Minute)
			cancel()
			if err == nil && set {
				t.Logf("locked on the promoted replica %v after its promotion", time.Since(start).Round(time.Millisecond))
				return
			}
			last = err
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("SetNX on a key of the failed-over shard still fails %v after its replica was promoted (last: %v): the node must learn the slot map again when a command fails", failoverRecovery, last)
	})
}
