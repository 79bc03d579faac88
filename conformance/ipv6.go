package conformance

import (
	"context"
	"testing"
	"time"

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
	lockUnlock := func(k, when string) {
		t.Helper()
		v := value()
		if ok := must(t, "SetNX on ::1 "+when)(n.SetNX(ctx, k, v, time.Minute)); !ok {
			t.Fatalf("SetNX(%s) on ::1 %s = false, want true", k, when)
		}
		if ok := must(t, "EvalRelease on ::1 "+when)(n.EvalRelease(ctx, k, v)); !ok {
			t.Fatalf("EvalRelease(%s) on ::1 %s = false, want true", k, when)
		}
	}
	for _, tag := range []string{"a", "b", "c", "d"} { // slots on both shards
		lockUnlock("{"+tag+"}"+key(t), "")
	}
	if id, ok := n.(driver.Identifier); ok {
		if _, err := id.Identity(ctx); err != nil {
			t.Fatalf("Identity on ::1 = %v", err)
		}
	}
	k := key(t)
	moveAway(t, ctx, c, k)
	lockUnlock(k, "after its slot moved")
	nn, ok := n.(driver.Notifier)
	if !ok {
		return
	}
	notify := make(chan struct{}, 1)
	cancel, err := nn.Subscribe(ctx, k, notify)
	if err != nil {
		t.Fatalf("Subscribe on ::1: %v", err)
	}
	defer cancel()
	v := value()
	must(t, "SetNX")(n.SetNX(ctx, k, v, time.Minute))
	must(t, "ReleaseNotify")(nn.ReleaseNotify(ctx, k, v))
	select {
	case <-notify:
	case <-ctx.Done():
		t.Fatal("no release heard on ::1")
	}
}
