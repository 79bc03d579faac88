package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// WithCluster makes RunRedis test the driver on Redis Cluster nodes too,
// opened with addresses "redis://host:port?cluster=true&addr=..." (see
// redistest.Cluster.URL): Cluster/Node runs Run over nodes that are clusters
// of two shards (three clusters, so that Redlock/ThreeNodes has three
// independent nodes), Cluster/Notifier/FollowsSlot hears a release after the
// key's slot moved, Cluster/Notifier/SubscribeAfterMove subscribes to a key
// whose slot moved while nobody was subscribed to it (the shard the node
// knew answers MOVED) and hears its release,
// Cluster/Notifier/MovedSparesShard checks that such a MOVED reply leaves
// the other subscriptions on that shard hearing theirs,
// Cluster/NotClusterEnabled checks that a cluster address naming a server
// that is not cluster-enabled fails every call, Cluster/TLS reaches a
// cluster over TLS with client
// certificates and a password, Cluster/Commands/Atomic checks, as
// Commands/Atomic does on a server, that each call runs one atomic command on
// the cluster's primary, Cluster/IPv6 reaches a cluster on ::1 (whose
// replies name IPv6 addresses, without brackets in CLUSTER NODES and MOVED),
// locks on both shards and after a slot moved, and hears releases (it skips
// on a machine without ::1), Cluster/Failover checks that after a shard's
// replica took over from its killed primary the node locks keys of the
// shard again, subscribes to their releases and hears them, and that a
// subscription made before hears them too (Locks, Subscribe, Subscription:
// within seconds), Cluster/DeadReplica, Cluster/HungReplica and
// Cluster/ReplicaHangsLater that a node opened while a replica is dead or
// hangs, or whose replica hangs once it is open (not yet marked failed by
// the cluster), locks, subscribes and answers Identity, and Cluster/Migration
// takes and releases locks while
// their slots migrate, whole (MOVED) and half way (ASK, TRYAGAIN): every
// call must answer as on a still cluster, or fail; never "not held" for a
// key that is held, nor "held" for one that is free.
func WithCluster() RedisOption {
	return func(s *redisSuite) { s.cluster = true }
}

// OnlyCluster makes RunRedis run only what WithCluster adds, for a test of
// its own.
func OnlyCluster() RedisOption {
	return func(s *redisSuite) { s.cluster, s.onlyCluster = true, true }
}

// SkipClusterMigration makes WithCluster's Cluster/Migration skip, saying
// why: for a client with a known fault there (a data race of its own under
// -race, say), so that the rest still runs.
func SkipClusterMigration(why string) RedisOption {
	return func(s *redisSuite) { s.skipMigration = why }
}

// clusterShards is the number of shards of the clusters RunRedis starts.
const clusterShards = 2

// runCluster runs the cluster subtests of RunRedis.
func (s *redisSuite) runCluster(t *testing.T) {
	clusters := make([]*redistest.Cluster, 3)
	var once sync.Once
	start := func(t *testing.T) {
		if testing.Short() {
			t.Skip("conformance: -short skips the cluster subtests, which start redis-server")
		}
		once.Do(func() { copy(clusters, redistest.NewClusters(t, len(clusters), clusterShards)) })
		for _, c := range clusters {
			if c == nil {
				t.Fatal("conformance: the clusters did not start (see the first cluster subtest)")
			}
		}
	}
	t.Run("Cluster", func(t *testing.T) {
		start(t)
		var next atomic.Int64
		t.Run("Node", func(t *testing.T) {
			Run(t, func(t *testing.T) driver.Node {
				return s.openURL(t, clusters[next.Add(1)%int64(len(clusters))].URL())
			})
		})
		for _, tc := range []struct {
			name    string
			timeout time.Duration
			fn      func(t *testing.T, ctx context.Context)
		}{
			{"Notifier/FollowsSlot", subtestTimeout, func(t *testing.T, ctx context.Context) { notifyFollowsSlot(t, ctx, s, clusters[1]) }},
			{"Notifier/SubscribeAfterMove", subtestTimeout, func(t *testing.T, ctx context.Context) { subscribeAfterMove(t, ctx, s, clusters[2]) }},
			{"Notifier/MovedSparesShard", subtestTimeout, func(t *testing.T, ctx context.Context) { movedSparesShard(t, ctx, s, clusters[2]) }},
			{"NotClusterEnabled", subtestTimeout, func(t *testing.T, ctx context.Context) { notClusterEnabled(t, ctx, s) }},
			{"TLS", subtestTimeout, func(t *testing.T, ctx context.Context) { clusterTLS(t, ctx, s) }},
			{"Commands/Atomic", subtestTimeout, func(t *testing.T, ctx context.Context) { clusterCommandsAtomic(t, ctx, s) }},
			{"IPv6", subtestTimeout, func(t *testing.T, ctx context.Context) { clusterIPv6(t, ctx, s) }},
			{"Failover", 3 * subtestTimeout, func(t *testing.T, ctx context.Context) { clusterFailover(t, ctx, s) }},
			{"DeadReplica", subtestTimeout, func(t *testing.T, ctx context.Context) {
				clusterDeadReplica(t, ctx, s, (*redistest.Server).Kill, false)
			}},
			{"HungReplica", subtestTimeout, func(t *testing.T, ctx context.Context) {
				clusterDeadReplica(t, ctx, s, (*redistest.Server).Pause, false)
			}},
			{"ReplicaHangsLater", subtestTimeout, func(t *testing.T, ctx context.Context) {
				clusterDeadReplica(t, ctx, s, (*redistest.Server).Pause, true)
			}},
			{"Migration", 2 * subtestTimeout, func(t *testing.T, ctx context.Context) {
				if s.skipMigration != "" {
					t.Skip(s.skipMigration)
				}
				clusterMigration(t, ctx, s, clusters[0])
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
				defer cancel()
				tc.fn(t, ctx)
			})
		}
	})
}

// openURL opens the node for addr, and closes it at the end of the test.
func (s *redisSuite) openURL(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := s.d.Open(addr)
	if err != nil {
		t.Fatalf("Open(%q) = %v", addr, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// clusterMigration takes and releases locks on keys of a few slots, from
// several goroutines, while those slots migrate between the shards, whole
// and half way.
func clusterMigration(t *testing.T, ctx context.Context, s *redisSuite, c *redistest.Cluster) {
	n := s.openURL(t, c.URL())
	fencer, _ := n.(driver.Fencer)
	// Keys of four slots, four workers per slot, so that the node's
	// commands go in pipelines that span slots and shards.
	tags := []string{"a", "b", "c", "d", "a", "b", "c", "d", "a", "b", "c", "d", "a", "b", "c", "d"}
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg         sync.WaitGroup
		ok, failed atomic.Int64
		wrongMu    sync.Mutex
		wrong      []string
		errorsSeen sync.Map
	)
	recordWrong := func(format string, args ...any) {
		wrongMu.Lock()
		wrong = append(wrong, fmt.Sprintf(format, args...))
		wrongMu.Unlock()
	}
	recordErr := func(err error) {
		failed.Add(1)
		errorsSeen.Store(err.Error(), true)
	}
	for w, tag := range tags {
		wg.Go(func() {
			for i := 0; workCtx.Err() == nil; i++ {
				k := fmt.Sprintf("{%s}:migrating:%d:%d", tag, w, i)
				v := value()
				cctx, cancel := context.WithTimeout(workCtx, 2*time.Second)
				var set bool
				var err error
				if fencer != nil && i%2 == 1 {
					set, _, err = fencer.SetNXFence(cctx, k, v, time.Minute, driver.FenceKey(k))
				} else {
					set, err = n.SetNX(cctx, k, v, time.Minute)
				}
				switch {
				case err != nil:
					recordErr(err)
					cancel()
					continue // unknown outcome: the key may be set
				case !set:
					recordWrong("SetNX(%s, new key) = false, nil: the key was free", k)
				}
				if got, err := n.Extend(cctx, k, v, time.Minute); err != nil {
					recordErr(err)
				} else if !got {
					recordWrong("Extend(%s, own value) = false, nil: the key is held", k)
				}
				if got, err := n.SetNX(cctx, k, value(), time.Minute); err != nil {
					recordErr(err)
				} else if got {
					recordWrong("SetNX(%s, other value) = true: the key is held", k)
				}
				if got, err := n.EvalRelease(cctx, k, v); err != nil {
					recordErr(err)
				} else if !got {
					recordWrong("EvalRelease(%s, own value) = false, nil: the key is held", k)
				} else {
					ok.Add(1)
				}
				cancel()
			}
		})
	}
	// Move each slot to the other shard and back, whole and then half way.
	shards := c.Shards()
	moves := 0
	for round := 0; round < 2 && ctx.Err() == nil; round++ {
		for _, tag := range tags[:4] {
			slot := redistest.KeySlot(tag)
			from := c.SlotShard(slot)
			to := shards[(from.Index()+1)%len(shards)]
			if round == 0 {
				if err := c.MigrateSlot(ctx, slot, to); err != nil {
					t.Fatalf("MigrateSlot(%d): %v", slot, err)
				}
			} else {
				m, err := c.StartMigration(ctx, slot, to)
				if err != nil {
					t.Fatalf("StartMigration(%d): %v", slot, err)
				}
				time.Sleep(50 * time.Millisecond) // keys on both sides: ASK, TRYAGAIN
				if _, err := m.MoveKeys(ctx, 10); err != nil {
					t.Fatalf("MoveKeys(%d): %v", slot, err)
				}
				time.Sleep(50 * time.Millisecond)
				if err := m.Finish(ctx); err != nil {
					t.Fatalf("Finish(%d): %v", slot, err)
				}
			}
			moves++
		}
	}
	time.Sleep(200 * time.Millisecond) // calls after the last move
	stop()
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("%d wrong answers while slots migrated (%d moves), first: %s", len(wrong), moves, wrong[0])
	}
	if ok.Load() == 0 {
		t.Fatalf("no lock taken and released while slots migrated (%d calls failed)", failed.Load())
	}
	var seen []string
	errorsSeen.Range(func(k, _ any) bool { seen = append(seen, k.(string)); return len(seen) < 3 })
	t.Logf("%d moves: %d locks taken and released, %d calls failed (a redirection that cannot be followed fails like a node): %q", moves, ok.Load(), failed.Load(), seen)
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the migration test ran out of time: %v", err)
	}
}

// notifyFollowsSlot checks that a subscription to a key's releases still
// hears them after the key's slot moved to another shard.
func notifyFollowsSlot(t *testing.T, ctx context.Context, s *redisSuite, c *redistest.Cluster) {
	n := s.openURL(t, c.URL())
	notifier := as[driver.Notifier](t, n)
	k := key(t)
	notify := make(chan struct{}, 1)
	cancel, err := notifier.Subscribe(ctx, k, notify)
	if err != nil {
		t.Fatalf("Subscribe = %v", err)
	}
	defer cancel()
	slot := redistest.KeySlot(k)
	to := c.Shards()[(c.SlotShard(slot).Index()+1)%len(c.Shards())]
	if err := c.MigrateSlot(ctx, slot, to); err != nil {
		t.Fatalf("MigrateSlot(%d): %v", slot, err)
	}
	// Release until the subscription, moved with the slot, hears it.
	for ctx.Err() == nil {
		v := value()
		if ok, err := n.SetNX(ctx, k, v, time.Minute); err != nil || !ok {
			t.Fatalf("SetNX after the move = %v, %v", ok, err)
		}
		if ok, err := notifier.ReleaseNotify(ctx, k, v); err != nil || !ok {
			t.Fatalf("ReleaseNotify after the move = %v, %v", ok, err)
		}
		select {
		case <-notify:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("no release heard after the key's slot moved: the subscription did not follow it")
}

// movedSubscribe is how long a Subscribe may take when the shard the node
// knew for the key's slot answers MOVED: the node learns the slot map again
// and subscribes at the new shard.
const movedSubscribe = 5 * time.Second

// sameShardKeys returns two keys whose slots differ but are served by one
// shard of c.
func sameShardKeys(t *testing.T, c *redistest.Cluster) (a, b string) {
	t.Helper()
	a = key(t)
	shard := c.SlotShard(redistest.KeySlot(a))
	for range 1000 {
		b = key(t)
		if slot := redistest.KeySlot(b); slot != redistest.KeySlot(a) && c.SlotShard(slot) == shard {
			return a, b
		}
	}
	t.Fatal("no two keys of different slots on one shard")
	return "", ""
}

// moveAway moves k's slot to another shard of c.
func moveAway(t *testing.T, ctx context.Context, c *redistest.Cluster, k string) {
	t.Helper()
	slot := redistest.KeySlot(k)
	to := c.Shards()[(c.SlotShard(slot).Index()+1)%len(c.Shards())]
	if err := c.MigrateSlot(ctx, slot, to); err != nil {
		t.Fatalf("MigrateSlot(%d): %v", slot, err)
	}
}

// hearsRelease takes and releases k with ReleaseNotify until notify hears
// it, for at most movedSubscribe.
func hearsRelease(t *testing.T, ctx context.Context, n driver.Node, notifier driver.Notifier, k string, notify <-chan struct{}) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, movedSubscribe)
	defer cancel()
	for ctx.Err() == nil {
		v := value()
		if ok, err := n.SetNX(ctx, k, v, time.Minute); err != nil || !ok {
			t.Fatalf("SetNX(%s) = %v, %v", k, ok, err)
		}
		if ok, err := notifier.ReleaseNotify(ctx, k, v); err != nil || !ok {
			t.Fatalf("ReleaseNotify(%s) = %v, %v", k, ok, err)
		}
		select {
		case <-notify:
			return true
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// subscribeAfterMove checks a Subscribe to a key whose slot moved while the
// node had no subscription on it, after the node subscribed to another key
// of the same shard (so that it knows the slot map from before): the shard
// answers MOVED, and the subscription must be made at the shard the slot
// moved to, and hear the key's release.
func subscribeAfterMove(t *testing.T, ctx context.Context, s *redisSuite, c *redistest.Cluster) {
	n := s.openURL(t, c.URL())
	notifier := as[driver.Notifier](t, n)
	ka, kb := sameShardKeys(t, c)
	cancelA, err := notifier.Subscribe(ctx, ka, make(chan struct{}, 1))
	if err != nil {
		t.Fatalf("Subscribe(%s) = %v", ka, err)
	}
	defer cancelA()
	moveAway(t, ctx, c, kb)
	// Subscribe before any command on kb: a command meeting MOVED could
	// teach the client the new slot map (go-redis reloads it), and the
	// SSUBSCRIBE would then not meet MOVED.
	notifyB := make(chan struct{}, 1)
	sctx, scancel := context.WithTimeout(ctx, movedSubscribe)
	defer scancel()
	start := time.Now()
	cancelB, err := notifier.Subscribe(sctx, kb, notifyB)
	if err != nil {
		t.Fatalf("Subscribe(%s) after its slot moved = %v after %v, want nil: a MOVED reply must re-route the channel to the shard that serves it now", kb, err, time.Since(start).Round(time.Millisecond))
	}
	defer cancelB()
	if !hearsRelease(t, ctx, n, notifier, kb, notifyB) {
		t.Fatalf("no release of %s heard after Subscribe, made after its slot moved, succeeded", kb)
	}
}

// movedSparesShard checks that a MOVED reply to one key's SSUBSCRIBE leaves
// the node's other subscriptions on that shard alive: a subscription made
// before still hears its key's releases.
func movedSparesShard(t *testing.T, ctx context.Context, s *redisSuite, c *redistest.Cluster) {
	n := s.openURL(t, c.URL())
	notifier := as[driver.Notifier](t, n)
	ka, kb := sameShardKeys(t, c)
	notifyA := make(chan struct{}, 1)
	cancelA, err := notifier.Subscribe(ctx, ka, notifyA)
	if err != nil {
		t.Fatalf("Subscribe(%s) = %v", ka, err)
	}
	defer cancelA()
	moveAway(t, ctx, c, kb)
	// No command on kb first, as in subscribeAfterMove.
	sctx, scancel := context.WithTimeout(ctx, movedSubscribe)
	defer scancel()
	if cancelB, err := notifier.Subscribe(sctx, kb, make(chan struct{}, 1)); err == nil {
		cancelB()
	} else {
		t.Logf("Subscribe(%s) after its slot moved = %v (Notifier/SubscribeAfterMove checks it)", kb, err)
	}
	if !hearsRelease(t, ctx, n, notifier, ka, notifyA) {
		t.Fatalf("the subscription to %s no longer hears its releases after a SSUBSCRIBE of %s, whose slot left the shard, met MOVED there: the shard's connection must stay", ka, kb)
	}
}

// notClusterEnabled checks a cluster address that names a server that is not
// cluster-enabled: every call fails, saying so (Redis' words: "cluster
// support disabled"), and nothing is written.
func notClusterEnabled(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	n := s.openURL(t, "redis://"+srv.Addr()+"?cluster=true")
	k, v := key(t), value()
	check := func(call string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s on a cluster address of a server that is not cluster-enabled = nil error, want one", call)
		case !strings.Contains(err.Error(), "cluster support disabled"):
			t.Errorf("%s on a cluster address of a server that is not cluster-enabled = %v, want an error that says \"cluster support disabled\"", call, err)
		}
	}
	ok, err := n.SetNX(ctx, k, v, time.Minute)
	check("SetNX", err)
	if ok {
		t.Errorf("SetNX = true on a cluster address of a server that is not cluster-enabled")
	}
	if got, err := srv.Do(ctx, "GET", k); err == nil && got != nil {
		t.Errorf("SetNX wrote %s = %v on a server that is not cluster-enabled", k, got)
	}
	if id, ok := n.(driver.Identifier); ok {
		_, err := id.Identity(ctx)
		check("Identity", err)
	}
	if notifier, ok := n.(driver.Notifier); ok {
		cancel, err := notifier.Subscribe(ctx, k, make(chan struct{}, 1))
		if err == nil {
			cancel()
		}
		check("Subscribe", err)
	}
}

// clusterTLS checks a cluster node over TLS with a password and client
// certificates: locks on keys of both shards, a release heard, and the
// password never shown.
func clusterTLS(t *testing.T, ctx context.Context, s *redisSuite) {
	c := redistest.NewCluster(t, clusterShards, redistest.WithServerOptions(
		redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired), redistest.WithPassword(password)))
	n := s.openURL(t, c.URL())
	if sn, ok := n.(fmt.Stringer); ok {
		hidesPassword(t, "String()", sn.String())
	}
	for _, tag := range []string{"a", "b", "c", "d"} { // slots on both shards
		k, v := "{"+tag+"}"+key(t), value()
		locksAndReleases(t, ctx, n, k, v, "over TLS")
	}
	if nn, ok := n.(driver.Notifier); ok {
		hearsOwnRelease(t, ctx, n, nn, key(t), "over TLS")
	}
}

// locksAndReleases takes k with value v on n and releases it, and fails the
// test unless both succeed; where says in the messages what the case is
// ("over TLS").
func locksAndReleases(t *testing.T, ctx context.Context, n driver.Node, k, v, where string) {
	t.Helper()
	if ok := must(t, "SetNX "+where)(n.SetNX(ctx, k, v, time.Minute)); !ok {
		t.Fatalf("SetNX(%s) %s = false, want true", k, where)
	}
	if ok := must(t, "EvalRelease "+where)(n.EvalRelease(ctx, k, v)); !ok {
		t.Fatalf("EvalRelease(%s) %s = false, want true", k, where)
	}
}

// hearsOwnRelease subscribes to k's releases, takes k on n and releases it
// with ReleaseNotify, and fails the test unless the release is heard before
// ctx ends; where is as for locksAndReleases.
func hearsOwnRelease(t *testing.T, ctx context.Context, n driver.Node, nn driver.Notifier, k, where string) {
	t.Helper()
	notify := make(chan struct{}, 1)
	cancel, err := nn.Subscribe(ctx, k, notify)
	if err != nil {
		t.Fatalf("Subscribe %s: %v", where, err)
	}
	defer cancel()
	v := value()
	must(t, "SetNX "+where)(n.SetNX(ctx, k, v, time.Minute))
	must(t, "ReleaseNotify "+where)(nn.ReleaseNotify(ctx, k, v))
	select {
	case <-notify:
	case <-ctx.Done():
		t.Fatalf("no release heard %s", where)
	}
}
