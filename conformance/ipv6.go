package conformance

import (
	"context"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// clusterIPv6 checks a cluster node over a cluster on ::1, whose CLUSTER
// SLOTS, CLUSTER NODES and MOVED replies name IPv6 addresses (without
// brackets in the last two): locks on keys of both shards, Identity, a
// release heard, then a lock and a release heard on a key whose slot moved to
// the other shard (the node follows a MOVED reply naming an IPv6 address). It
// skips if the machine has no ::1.
func clusterIPv6(t *testing.T, ctx context.Context, s *redisSuite) {
	redistest.SkipWithoutIPv6(t)
	c := redistest.NewCluster(t, clusterShards, redistest.WithReplicas(1), redistest.WithServerOptions(redistest.WithIPv6()))
	replicasOnline(t, ctx, c)
	n := s.openURL(t, c.URL())
	for _, tag := range []string{"a", "b", "c", "d"} { // slots on both shards
		locksAndReleases(t, ctx, n, "{"+tag+"}"+key(t), value(), "on ::1")
	}
	if id, ok := n.(driver.Identifier); ok {
		if _, err := id.Identity(ctx); err != nil {
			t.Fatalf("Identity on ::1 = %v", err)
		}
	}
	k := key(t)
	moveAway(t, ctx, c, k)
	locksAndReleases(t, ctx, n, k, value(), "on ::1 after its slot moved")
	if nn, ok := n.(driver.Notifier); ok {
		hearsOwnRelease(t, ctx, n, nn, k, "on ::1 after its slot moved")
	}
}
