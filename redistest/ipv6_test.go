package redistest_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// A server started WithIPv6 listens on ::1 only, and keeps its address over
// a restart.
func TestIPv6Server(t *testing.T) {
	redistest.SkipWithoutIPv6(t)
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t, redistest.WithIPv6())
	host, port, err := net.SplitHostPort(s.Addr())
	require.NoError(t, err)
	require.Equal(t, "::1", host)
	require.Equal(t, "redis://"+s.Addr(), s.URL())
	v, err := s.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
	bind, err := s.Do(ctx, "CONFIG", "GET", "bind")
	require.NoError(t, err)
	require.Equal(t, []any{"bind", "::1"}, bind)
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("the server's port answers on 127.0.0.1 too")
	}

	require.NoError(t, s.Restart(ctx))
	v, err = s.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}

// A cluster on ::1: every node, replicas included, names the others by
// their IPv6 addresses in CLUSTER SLOTS, CLUSTER NODES and MOVED replies, and
// a slot migrates between shards.
func TestIPv6Cluster(t *testing.T) {
	redistest.SkipWithoutIPv6(t)
	t.Parallel()
	ctx := t.Context()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1), redistest.WithServerOptions(redistest.WithIPv6()))
	for _, seed := range c.Seeds() {
		require.True(t, strings.HasPrefix(seed, "[::1]:"), "seed %s", seed)
	}
	require.True(t, strings.HasPrefix(c.URL(), "redis://[::1]:"), c.URL())
	for _, srv := range c.Servers() {
		m := slotMap(t, srv)
		for slot, addr := range m {
			require.Equal(t, c.SlotShard(slot).Primary().Addr(), addr, "CLUSTER SLOTS on %s, slot %d", srv.Addr(), slot)
		}
		nodes, err := srv.Do(ctx, "CLUSTER", "NODES")
		require.NoError(t, err)
		require.NotContains(t, nodes, "127.0.0.1", "CLUSTER NODES on %s", srv.Addr())
	}

	k := c.KeyOn(c.Shards()[0], "k")
	to := c.Shards()[1]
	require.NoError(t, c.MigrateSlot(ctx, redistest.KeySlot(k), to))
	_, err := c.Shards()[0].Primary().Do(ctx, "GET", k)
	// Redis writes the address of a MOVED reply without brackets.
	host, port, _ := net.SplitHostPort(to.Primary().Addr())
	require.EqualError(t, err, fmt.Sprintf("MOVED %d %s:%s", redistest.KeySlot(k), host, port))
	require.NoError(t, c.WaitHealthy(ctx))
}
