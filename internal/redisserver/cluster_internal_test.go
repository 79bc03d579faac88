package redisserver

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterAsk leaves a slot half migrated: the source answers the keys it
// still holds and sends -ASK for the others; the target serves a moved key
// only after ASKING, on the same connection, and otherwise sends -MOVED back
// to the source, which still owns the slot. Finish ends the migration.
func TestClusterAsk(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := NewCluster(t, 2)
	slot := KeySlot("{ask}")
	from := c.SlotShard(slot)
	to := c.Shards()[1-from.Index()]
	src, dst := from.Primary(), to.Primary()
	keys := []string{"{ask}a", "{ask}b", "{ask}c", "{ask}d"}
	for _, k := range keys {
		_, err := src.Do(ctx, "SET", k, "v"+k)
		require.NoError(t, err)
	}

	m, err := c.StartMigration(ctx, slot, to)
	require.NoError(t, err)
	require.Equal(t, slot, m.Slot())
	require.Same(t, from, m.From())
	require.Same(t, to, m.To())
	_, err = c.StartMigration(ctx, slot, to)
	require.ErrorContains(t, err, "already being migrated")
	_, err = m.MoveKeys(ctx, 0)
	require.ErrorContains(t, err, "n must be positive")

	moved, err := m.MoveKeys(ctx, 2)
	require.NoError(t, err)
	require.Len(t, moved, 2)
	ask := fmt.Sprintf("ASK %d %s", slot, dst.Addr())
	back := fmt.Sprintf("MOVED %d %s", slot, src.Addr())
	for _, k := range keys {
		if slices.Contains(moved, k) {
			_, err := src.Do(ctx, "GET", k)
			require.EqualError(t, err, ask, "GET %s on the source", k)
			_, err = dst.Do(ctx, "GET", k)
			require.EqualError(t, err, back, "GET %s on the target without ASKING", k)
			replies, err := doAll(ctx, dst.addr, "", nil, [][]string{{"ASKING"}, {"GET", k}})
			require.NoError(t, err)
			require.Equal(t, []any{"OK", "v" + k}, replies, "ASKING, GET %s on the target", k)
		} else {
			v, err := src.Do(ctx, "GET", k)
			require.NoError(t, err, "GET %s, not moved yet, on the source", k)
			require.Equal(t, "v"+k, v)
		}
	}
	// The slot stays with the source until the migration is finished.
	require.Same(t, from, c.SlotShard(slot))
	for _, srv := range c.Servers() {
		v, err := srv.Do(ctx, "CLUSTER", "NODES")
		require.NoError(t, err)
		view, err := parseClusterNodes(v.(string))
		require.NoError(t, err)
		served := false
		for _, r := range view[from.ID()].slots {
			served = served || (r.First <= slot && slot <= r.Last)
		}
		require.True(t, served, "%s sees slot %d moved before Finish", srv.Addr(), slot)
	}

	require.NoError(t, m.Finish(ctx))
	require.NoError(t, m.Finish(ctx), "a second Finish")
	_, err = m.MoveKeys(ctx, 1)
	require.ErrorContains(t, err, "finished")
	require.Same(t, to, c.SlotShard(slot))
	for _, k := range keys {
		_, err := src.Do(ctx, "GET", k)
		require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", slot, dst.Addr()))
		v, err := dst.Do(ctx, "GET", k)
		require.NoError(t, err)
		require.Equal(t, "v"+k, v)
	}
	n, err := dst.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	require.NoError(t, err)
	require.Equal(t, int64(len(keys)), n)
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	view, err := parseClusterNodes("" +
		"07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,hostname4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,hostname1 myself,master - 0 0 1 connected 0-5460 5462 [5461->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\n" +
		"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f ::1:30002@31002 master - 0 0 2 connected 5461 5463-16383\n") // IPv6: no brackets
	require.NoError(t, err)
	require.Equal(t, clusterView{
		"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f": {port: 30002, flags: []string{"master"}, primary: "-", epoch: 2, slots: []SlotRange{{5461, 5461}, {5463, 16383}}},
		"07c37dfeb235213a872192d90877d0cd55635b91": {port: 30004, flags: []string{"slave"}, primary: "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca", epoch: 4},
		"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca": {port: 30001, flags: []string{"myself", "master"}, primary: "-", epoch: 1, slots: []SlotRange{{0, 5460}, {5462, 5462}}},
	}, view)
	for _, bad := range []string{"a b c", "id host:x@1 master - 0 0 1 connected", "id nocolon@1 master - 0 0 1 connected", "id 127.0.0.1:1@2 master - 0 0 1 connected 5-3", "id 127.0.0.1:1@2 master - 0 0 1 connected 16384", "id 127.0.0.1:1@2 master - 0 0 x connected"} {
		_, err := parseClusterNodes(bad + "\n")
		require.Error(t, err, bad)
	}
}

// withTLSSetup marks a config as WithTLS's would, without certificates.
func withTLSSetup() Option { return func(c *config) { c.tls = &tlsSetup{} } }

// TestKillHoldsClusterBusPort kills a cluster node: until it restarts, no one
// else can take its cluster bus port either (a server started meanwhile on
// it would make the restart fail), and the restarted node rejoins. Before,
// Kill held the client port alone. busPort reads the bus port from the
// directives as redis-server does.
func TestKillHoldsClusterBusPort(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, 1)
	n := c.Shards()[0].primary
	require.NoError(t, n.srv.Kill())
	busAddr := net.JoinHostPort(n.srv.cfg.host(), strconv.Itoa(n.bus))
	if l, err := net.Listen("tcp", busAddr); err == nil {
		l.Close()
		t.Fatalf("the killed node's cluster bus port %s could be taken", busAddr)
	}
	require.NoError(t, n.srv.Restart(t.Context()))
	require.NoError(t, c.WaitHealthy(t.Context()))

	for _, tc := range []struct {
		opts []Option
		port int
		want int // 0: no bus
	}{
		{nil, 7000, 0},
		{[]Option{WithConfig("cluster-enabled", "yes")}, 7000, 17000},
		{[]Option{WithConfig("cluster-enabled", "yes"), WithConfig("cluster-port", "7100")}, 7000, 7100},
		{[]Option{WithConfig("cluster-enabled", "yes"), WithConfig("cluster-port", "0")}, 7000, 17000},
		{[]Option{WithConfig("cluster-enabled", "yes"), WithConfig("cluster-enabled", "no")}, 7000, 0},
		{[]Option{WithConfig("cluster-enabled", "yes")}, 60000, 0}, // port+10000 is no port
		// WithTLS: no plain TCP port (0), unless the bus is TLS too.
		{[]Option{withTLSSetup(), WithConfig("cluster-enabled", "yes")}, 7000, 10000},
		{[]Option{withTLSSetup(), WithConfig("cluster-enabled", "yes"), WithConfig("tls-cluster", "yes")}, 7000, 17000},
	} {
		var cfg config
		for _, o := range tc.opts {
			o(&cfg)
		}
		bus, ok := cfg.busPort(tc.port)
		require.Equal(t, tc.want != 0, ok, "%v", cfg.directives)
		if ok {
			require.Equal(t, tc.want, bus, "%v", cfg.directives)
		}
	}
}
