package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// failoverRecovery bounds how long a cluster node may take, after a failover
// promoted a shard's replica, to lock keys of the shard and hear their
// releases again. The client's periodic reload of its slot map (a minute
// for go-redis) must not be what it waits for.
const failoverRecovery = 10 * time.Second

// clusterFailover kills the primary of a shard of a cluster whose shards
// have a replica each, and checks that nodes opened and used before it
// lock keys of the shard (Locks), subscribe to their releases and hear them
// (Subscribe), and keep hearing those of a subscription made before
// (Subscription), soon after the replica was promoted. Three shards, so
// that a majority of primaries is left to elect the replica; a cluster node
// timeout of a second, so that the failover takes seconds.
func clusterFailover(t *testing.T, ctx context.Context, s *redisSuite) {
	c := redistest.NewCluster(t, 3, redistest.WithReplicas(1),
		redistest.WithServerOptions(redistest.WithConfig("cluster-node-timeout", "1000")))
	shard := c.Shards()[0]
	onShard := func(t *testing.T, prefix string) string {
		return c.KeyOn(shard, key(t)+":"+prefix+":")
	}
	// Nodes that know the shard's primary: one has locked a key there, one
	// has subscribed and unsubscribed, one keeps a subscription.
	locker := s.openURL(t, c.URL())
	if k, v := onShard(t, "before"), value(); must(t, "SetNX before the failover")(locker.SetNX(ctx, k, v, time.Minute)) {
		must(t, "EvalRelease before the failover")(locker.EvalRelease(ctx, k, v))
	}

	subscriber, ok := s.openURL(t, c.URL()).(driver.Notifier)
	if !ok {
		t.Fatal("a cluster node must be a driver.Notifier") // every driver that runs the cluster cases is
	}
	if cancel, err := subscriber.Subscribe(ctx, onShard(t, "before"), make(chan struct{}, 1)); err != nil {
		t.Fatalf("Subscribe before the failover = %v", err)
	} else {
		cancel()
	}
	holder := s.openURL(t, c.URL()).(driver.Notifier)
	held := onShard(t, "held")
	heldNotify := make(chan struct{}, 1)
	cancelHeld, err := holder.Subscribe(ctx, held, heldNotify)
	if err != nil {
		t.Fatalf("Subscribe before the failover = %v", err)
	}
	defer cancelHeld()

	// Fail the primary over.
	replicasOnline(t, ctx, c)
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
	// hears publishes a release of k on the promoted replica until notify
	// hears one, for at most a second.
	hears := func(t *testing.T, k string, notify <-chan struct{}) bool {
		t.Helper()
		for range 5 {
			if _, err := promoted.Do(ctx, "SPUBLISH", driver.ReleaseChannel(k), ""); err != nil {
				t.Fatalf("SPUBLISH on the promoted replica: %v", err)
			}
			select {
			case <-notify:
				return true
			case <-time.After(200 * time.Millisecond):
			}
		}
		return false
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
	t.Run("Subscribe", func(t *testing.T) {
		start := time.Now()
		var last error
		for time.Since(start) < failoverRecovery {
			k, notify := onShard(t, "after"), make(chan struct{}, 1)
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			stop, err := subscriber.Subscribe(cctx, k, notify)
			cancel()
			if err == nil {
				heard := hears(t, k, notify)
				stop()
				if heard {
					t.Logf("subscribed on the promoted replica %v after its promotion", time.Since(start).Round(time.Millisecond))
					return
				}
				err = fmt.Errorf("Subscribe(%s) succeeded but heard no release published on the promoted replica", k)
			}
			last = err
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("no working subscription to a key of the failed-over shard %v after its replica was promoted (last: %v): a subscription must follow its channel to the new primary", failoverRecovery, last)
	})
	t.Run("Subscription", func(t *testing.T) {
		start := time.Now()
		for time.Since(start) < failoverRecovery {
			if hears(t, held, heldNotify) {
				t.Logf("the subscription made before heard a release %v after the promotion", time.Since(start).Round(time.Millisecond))
				return
			}
		}
		t.Fatalf("a subscription made before the failover hears no release on the promoted replica %v after its promotion: it must follow its channel to the new primary", failoverRecovery)
	})
}

// clusterDeadReplica checks a node opened on a cluster one of whose
// replicas is dead (kill: it refuses connections) or hangs (kill is Pause:
// it takes them and never answers), before the cluster marks it failed
// (after its cluster node timeout, 15 s by default): the primaries answer,
// the node sends locks to them alone and asks them first about the whole
// cluster, so locks, subscriptions and Identity work.
//
// With afterOpen, the replica dies or hangs once the node is open and
// connected to it: cluster-wide questions (Identity's CLUSTER NODES, the
// slot map) go to the primaries first, so a hung replica holds none up.
func clusterDeadReplica(t *testing.T, ctx context.Context, s *redisSuite, kill func(*redistest.Server) error, afterOpen bool) {
	c := redistest.NewCluster(t, 1, redistest.WithReplicas(1))
	replicasOnline(t, ctx, c)
	rep := c.Shards()[0].Replicas()[0]
	defer rep.Kill() // a paused server's connections end with it
	var n driver.Node
	if afterOpen {
		n = s.openURL(t, c.URL())
		must(t, "SetNX before the replica fails")(n.SetNX(ctx, key(t), value(), time.Minute))
	}
	if err := kill(rep); err != nil {
		t.Fatal(err)
	}
	if !afterOpen {
		n = s.openURL(t, c.URL())
	}
	k := key(t)
	locksAndReleases(t, ctx, n, k, value(), "with a dead replica")
	if id, ok := n.(driver.Identifier); ok {
		for range 8 { // the node asks one node of the cluster, in no set order among the primaries or the others
			// Well below the second a hung replica holds a question
			// up, far above a primary's answer.
			ictx, cancel := context.WithTimeout(ctx, 750*time.Millisecond)
			_, err := id.Identity(ictx)
			cancel()
			if err != nil {
				t.Fatalf("Identity with a dead replica = %v", err)
			}
		}
	}
	if nn, ok := n.(driver.Notifier); ok {
		hearsOwnRelease(t, ctx, n, nn, k, "with a dead replica")
	}
}

// replicasOnline writes a key on every primary of c and waits until CLUSTER
// SHARDS shows every replica online: a replica that has not received data
// yet is "loading", and a client leaves it out of the nodes it knows.
func replicasOnline(t *testing.T, ctx context.Context, c *redistest.Cluster) {
	t.Helper()
	for _, shard := range c.Shards() {
		k := c.KeyOn(shard, key(t)+":")
		if _, err := shard.Primary().Do(ctx, "SET", k, "x"); err != nil {
			t.Fatalf("SET on a primary: %v", err)
		}
	}
	for {
		v, err := c.Shards()[0].Primary().Do(ctx, "CLUSTER", "SHARDS")
		if err == nil && !strings.Contains(fmt.Sprint(v), "loading") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the replicas are not online (CLUSTER SHARDS: %v, %v)", v, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
