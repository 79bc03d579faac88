package redistest_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// slotMap reads CLUSTER SLOTS from s: the address of the node that serves
// each slot, "" where none does.
func slotMap(t *testing.T, s *redistest.Server) [redistest.ClusterSlots]string {
	t.Helper()
	v, err := s.Do(t.Context(), "CLUSTER", "SLOTS")
	require.NoError(t, err)
	var m [redistest.ClusterSlots]string
	for _, e := range v.([]any) {
		r := e.([]any)
		first, last := r[0].(int64), r[1].(int64)
		primary := r[2].([]any)
		addr := net.JoinHostPort(primary[0].(string), strconv.FormatInt(primary[1].(int64), 10))
		for slot := first; slot <= last; slot++ {
			require.Empty(t, m[slot], "slot %d listed twice by %s", slot, s.Addr())
			m[slot] = addr
		}
	}
	return m
}

func TestClusterServesEverySlot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := redistest.NewCluster(t, 3)
	shards := c.Shards()
	require.Len(t, shards, 3)
	require.Equal(t, redistest.Addrs(c.Servers()), c.Seeds())
	require.Equal(t, "redis://"+c.Seeds()[0]+"?cluster=true&addr="+c.Seeds()[1]+"&addr="+c.Seeds()[2], c.URL())

	// The shards split the slots evenly, in order, and every node agrees.
	want := [redistest.ClusterSlots]string{}
	next := 0
	for i, s := range shards {
		require.Equal(t, i, s.Index())
		require.Empty(t, s.Replicas())
		id, err := s.Primary().Do(ctx, "CLUSTER", "MYID")
		require.NoError(t, err)
		require.Equal(t, id, s.ID())
		for _, r := range s.Slots() {
			require.Equal(t, next, r.First, "shard %d's slots", i)
			for slot := r.First; slot <= r.Last; slot++ {
				want[slot] = s.Primary().Addr()
				require.Same(t, s, c.SlotShard(slot))
			}
			next = r.Last + 1
		}
	}
	require.Equal(t, redistest.ClusterSlots, next, "slots assigned")
	require.Nil(t, c.SlotShard(-1))
	require.Nil(t, c.SlotShard(redistest.ClusterSlots))
	for _, srv := range c.Servers() {
		require.Equal(t, want, slotMap(t, srv), "CLUSTER SLOTS on %s", srv.Addr())
		info, err := srv.Do(ctx, "CLUSTER", "INFO")
		require.NoError(t, err)
		require.Contains(t, info, "cluster_state:ok")
		require.Contains(t, info, "cluster_slots_ok:16384")
		require.Contains(t, info, "cluster_known_nodes:3")
	}

	// Keys are served where KeySlot says, and redirected elsewhere.
	for i := range 100 {
		key := fmt.Sprintf("key:%d", i)
		slot := redistest.KeySlot(key)
		owner := c.SlotShard(slot)
		_, err := owner.Primary().Do(ctx, "SET", key, "v")
		require.NoError(t, err, "SET %s (slot %d) on its shard", key, slot)
		other := shards[(owner.Index()+1)%3].Primary()
		_, err = other.Do(ctx, "GET", key)
		require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", slot, owner.Primary().Addr()))
	}

	// Each node's cluster configuration is in its own temporary directory,
	// never in the working directory (the source tree).
	for _, srv := range c.Servers() {
		dir, err := srv.Do(ctx, "CONFIG", "GET", "dir")
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(dir.([]any)[1].(string), "nodes.conf"))
		require.NoError(t, err)
	}
	_, err := os.Stat("nodes.conf")
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestKeySlot(t *testing.T) {
	t.Parallel()
	// Values from the Redis Cluster specification and redis-cli sessions.
	require.Equal(t, 12182, redistest.KeySlot("foo"))
	require.Equal(t, 5061, redistest.KeySlot("bar"))
	require.Equal(t, 12739, redistest.KeySlot("123456789")) // CRC16/XMODEM check value 0x31C3
	require.Equal(t, redistest.KeySlot("user1000"), redistest.KeySlot("{user1000}.following"))
	require.NotEqual(t, redistest.KeySlot("{}x"), redistest.KeySlot("x")) // an empty tag hashes the whole key
}

func TestKeySlotMatchesServer(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 1)
	srv := c.Shards()[0].Primary()
	for _, key := range []string{"", "a", "foo", "{user1000}.following", "{}", "{}x", "a{b}c", "{{a}}", "}{", "a{", "{a", "x{}{y}", "{a}{b}", "lock:{job}", "lock:job}"} {
		v, err := srv.Do(t.Context(), "CLUSTER", "KEYSLOT", key)
		require.NoError(t, err)
		require.Equal(t, v, int64(redistest.KeySlot(key)), "KeySlot(%q)", key)
	}
}

func TestClusterMigrateSlot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := redistest.NewCluster(t, 3)
	slot := redistest.KeySlot("{mig}")
	from := c.SlotShard(slot)
	to := c.Shards()[(from.Index()+1)%3]
	third := c.Shards()[(from.Index()+2)%3]
	keys := make([]string, 250) // more than one MIGRATE batch
	for i := range keys {
		keys[i] = fmt.Sprintf("{mig}:%d", i)
		_, err := from.Primary().Do(ctx, "SET", keys[i], "v"+strconv.Itoa(i))
		require.NoError(t, err)
	}

	require.NoError(t, c.MigrateSlot(ctx, slot, to))
	require.Same(t, to, c.SlotShard(slot))
	require.Contains(t, to.Slots(), redistest.SlotRange{First: slot, Last: slot})
	for _, r := range from.Slots() {
		require.False(t, r.First <= slot && slot <= r.Last, "the old shard still has slot %d: %v", slot, r)
	}
	n, err := to.Primary().Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	require.NoError(t, err)
	require.Equal(t, int64(len(keys)), n)
	n, err = from.Primary().Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	require.NoError(t, err)
	require.Equal(t, int64(0), n)
	moved := fmt.Sprintf("MOVED %d %s", slot, to.Primary().Addr())
	for i, key := range keys {
		v, err := to.Primary().Do(ctx, "GET", key)
		require.NoError(t, err)
		require.Equal(t, "v"+strconv.Itoa(i), v)
		if i%50 == 0 {
			_, err = from.Primary().Do(ctx, "GET", key)
			require.EqualError(t, err, moved, "GET on the old owner")
			_, err = third.Primary().Do(ctx, "GET", key)
			require.EqualError(t, err, moved, "GET on a third shard")
		}
	}
	for _, srv := range c.Servers() {
		require.Equal(t, to.Primary().Addr(), slotMap(t, srv)[slot], "CLUSTER SLOTS on %s", srv.Addr())
	}

	// An empty slot moves back, and bad requests are refused.
	require.NoError(t, c.MigrateSlot(ctx, slot+1, to))
	require.NoError(t, c.MigrateSlot(ctx, slot, from))
	require.Same(t, from, c.SlotShard(slot))
	require.ErrorContains(t, c.MigrateSlot(ctx, slot, from), "already served by shard")
	require.ErrorContains(t, c.MigrateSlot(ctx, -1, to), "slot -1")
	require.ErrorContains(t, c.MigrateSlot(ctx, redistest.ClusterSlots, to), "slot 16384")
	require.ErrorContains(t, c.MigrateSlot(ctx, slot, nil), "not one of this cluster's")
	other := redistest.NewCluster(t, 1)
	require.ErrorContains(t, c.MigrateSlot(ctx, slot, other.Shards()[0]), "not one of this cluster's")
}

func TestClusterReplicasAndAnnouncePort(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1), redistest.WithServerOptions(redistest.WithPassword("s3cret")))
	require.Len(t, c.Servers(), 4)
	require.Equal(t, "redis://:s3cret@"+c.Seeds()[0]+"?cluster=true&addr="+c.Seeds()[1], c.URL())
	for _, s := range c.Shards() {
		require.Len(t, s.Replicas(), 1)
		role, err := s.Replicas()[0].Do(ctx, "ROLE")
		require.NoError(t, err)
		require.Equal(t, "slave", role.([]any)[0])
		require.Equal(t, strconv.Itoa(portOf(t, s.Primary().Addr())), fmt.Sprint(role.([]any)[2]))
	}

	// Keys migrate with a password too.
	slot := redistest.KeySlot("{pw}")
	from := c.SlotShard(slot)
	to := c.Shards()[1-from.Index()]
	_, err := from.Primary().Do(ctx, "SET", "{pw}k", "v")
	require.NoError(t, err)
	require.NoError(t, c.MigrateSlot(ctx, slot, to))
	v, err := to.Primary().Do(ctx, "GET", "{pw}k")
	require.NoError(t, err)
	require.Equal(t, "v", v)

	// A forwarding proxy in front of shard 0 (as a fault proxy would be),
	// announced in its place: redirections and the slot map name it, and
	// the shard's replica reaches its primary through it.
	s0, s1 := c.Shards()[0], c.Shards()[1]
	p := testproxy.New(t, s0.Primary().Addr())
	require.NoError(t, c.SetAnnouncePort(ctx, s0, portOf(t, p.Addr())))
	for _, srv := range c.Servers() {
		require.Equal(t, p.Addr(), slotMap(t, srv)[s0.Slots()[0].First], "CLUSTER SLOTS on %s", srv.Addr())
	}
	key := c.KeyOn(s0, "k")
	_, err = s1.Primary().Do(ctx, "GET", key)
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", redistest.KeySlot(key), p.Addr()))

	// The setting outlives a restart of the primary.
	require.NoError(t, s0.Primary().Restart(ctx))
	require.NoError(t, c.WaitHealthy(ctx))
	_, err = s1.Primary().Do(ctx, "GET", key)
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", redistest.KeySlot(key), p.Addr()))

	require.NoError(t, c.SetAnnouncePort(ctx, s0, 0))
	_, err = s1.Primary().Do(ctx, "GET", key)
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", redistest.KeySlot(key), s0.Primary().Addr()))
	require.ErrorContains(t, c.SetAnnouncePort(ctx, s0, 70000), "port 70000")
	require.ErrorContains(t, c.SetAnnouncePort(ctx, nil, 1), "not one of this cluster's")
}

// KeyOn gives a key of each shard, named with the prefix, and none for a
// shard of another cluster.
func TestKeyOn(t *testing.T) {
	c, other := redistest.NewCluster(t, 3), redistest.NewCluster(t, 1)
	for _, s := range c.Shards() {
		key := c.KeyOn(s, "app:")
		require.True(t, strings.HasPrefix(key, "app:"), "KeyOn = %q", key)
		require.Same(t, s, c.SlotShard(redistest.KeySlot(key)), "KeyOn = %q", key)
	}
	require.Empty(t, c.KeyOn(other.Shards()[0], "app:"))
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return port
}

func TestClusterTLS(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	certs := redistest.NewCerts(t)
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1),
		redistest.WithServerOptions(redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword("s3cret")))

	// The URL is a cluster address the drivers' parser takes, with every
	// primary as a seed, the password and the TLS files.
	n, err := redisaddr.ParseNode(c.URL())
	require.NoError(t, err)
	require.True(t, n.Cluster)
	require.True(t, n.TLS)
	require.Equal(t, c.Seeds(), n.Seeds)
	require.Equal(t, "s3cret", n.Password)
	require.Equal(t, certs.CAFile, n.TLSCAFile)
	require.Equal(t, certs.ClientCertFile, n.TLSCertFile)
	require.Equal(t, certs.ClientKeyFile, n.TLSKeyFile)

	// Replication, the cluster bus (WaitHealthy) and MIGRATE work over TLS.
	slot := redistest.KeySlot("{tls}")
	from := c.SlotShard(slot)
	to := c.Shards()[1-from.Index()]
	_, err = from.Primary().Do(ctx, "SET", "{tls}k", "v")
	require.NoError(t, err)
	require.NoError(t, c.MigrateSlot(ctx, slot, to))
	v, err := to.Primary().Do(ctx, "GET", "{tls}k")
	require.NoError(t, err)
	require.Equal(t, "v", v)
	_, err = from.Primary().Do(ctx, "GET", "{tls}k")
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", slot, to.Primary().Addr()))
	for _, s := range c.Shards() {
		role, err := s.Replicas()[0].Do(ctx, "ROLE")
		require.NoError(t, err)
		require.Equal(t, "connected", role.([]any)[3], "replica of shard %d", s.Index())
	}
}

func TestStartClusterRejects(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, tc := range []struct {
		shards int
		opts   []redistest.ClusterOption
		want   string
	}{
		{0, nil, "0 shards"},
		{-1, nil, "-1 shards"},
		{65, nil, "65 shards of 1 server each is more than 64 servers"},
		{33, []redistest.ClusterOption{redistest.WithReplicas(1)}, "33 shards of 2 servers each is more than 64 servers"},
		{1, []redistest.ClusterOption{redistest.WithReplicas(-1)}, "WithReplicas(-1)"},
		{2, []redistest.ClusterOption{redistest.WithReplicas(40)}, "more than 64 servers"},
		// shards*(1+replicas) overflows int to 0: still too many servers
		// (1<<62 on 64-bit, 1<<30 on 32-bit, where 1<<62 does not compile).
		{math.MaxInt/2 + 1, []redistest.ClusterOption{redistest.WithReplicas(3)}, "more than 64 servers"},
		{math.MaxInt, nil, "more than 64 servers"},
		{1, []redistest.ClusterOption{redistest.WithServerOptions(redistest.WithConfig("cluster-port", "1"))}, `"cluster-port"`},
		{1, []redistest.ClusterOption{redistest.WithServerOptions(redistest.WithConfig("Cluster-Enabled", "no"))}, `"Cluster-Enabled"`},
		{1, []redistest.ClusterOption{redistest.WithServerOptions(redistest.WithConfig("port", "1"))}, `"port"`},
		{1, []redistest.ClusterOption{redistest.WithServerOptions(redistest.WithTLS(nil, redistest.ClientCertsNo))}, "WithTLS needs Certs"},
		{1, []redistest.ClusterOption{redistest.WithServerOptions(redistest.WithConfig("tls-cluster", "no"))}, `"tls-cluster"`},
	} {
		c, err := redistest.StartCluster(ctx, tc.shards, tc.opts...)
		require.ErrorContains(t, err, tc.want)
		require.Nil(t, c)
		require.False(t, strings.Contains(err.Error(), "panic"))
	}
}
