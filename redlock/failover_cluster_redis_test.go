package redlock_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A waiter in Lock over a node that is a Redis Cluster (every driver, from
// New over the user's cluster client and from Open), subscribed to its key's
// release, when a failover (CLUSTER FAILOVER TAKEOVER, the old primary
// alive) promotes a replica that joined the shard after the node's client
// read the cluster's map: it is subscribed in the shard again (on the
// promoted replica, or on the old primary, now its replica), and it hears
// the release published on the promoted replica. The rueidis
// family's clients knew only the nodes of the map they read: the node's
// subscriptions asked them for a connection to the new primary, which they
// did not have, every second for as long as no command of the node met the
// old primary's MOVED (the waiter's backoff, 20s here; for ever without a
// command on the slot): rueidis and valkeygo failed, New and Open alike,
// not subscribed there 10s after the failover. goredis reloads its map and
// passed.
//
// The subtests run in parallel (go test's -parallel at a time): each has a
// cluster, a replica and a Client of its own, and spends most of its time
// waiting for the cluster (its start, the replica's sync, the failover);
// one after the other they took 37s.
func TestRedisClusterWaiterFollowsFailoverToNewReplica(t *testing.T) {
	const key = "k"
	channel := driver.ReleaseChannel(key)
	slot := redistest.KeySlot(channel)
	for name, newNode := range clusterNodes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cl := redistest.NewCluster(t, 2)
			owner := cl.SlotShard(slot).Primary()
			_, err := owner.Do(t.Context(), "SET", key, "someone", "PX", "60000")
			require.NoError(t, err)
			c, err := redlock.New([]driver.Node{newNode(t, cl)}, redlock.WithTTL(time.Minute),
				redlock.WithBackoff(func(int) time.Duration { return 20 * time.Second }))
			require.NoError(t, err)
			defer c.Close()
			waited := make(chan error, 1)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			go func() {
				l, err := c.Lock(ctx, key)
				if err == nil {
					l.Unlock(context.Background())
				}
				waited <- err
			}()
			require.Eventually(t, func() bool { return numsubOn(t, owner, channel) == 1 },
				5*time.Second, 10*time.Millisecond, "the waiter did not subscribe")

			// A replica joins the key's shard, and a failover promotes it.
			replica := joinAsReplica(t, cl, owner)
			_, err = replica.Do(t.Context(), "CLUSTER", "FAILOVER", "TAKEOVER")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				v, err := replica.Do(t.Context(), "ROLE")
				return err == nil && v.([]any)[0] == "master"
			}, 10*time.Second, 10*time.Millisecond, "the failover did not promote the replica")
			// The old primary, demoted, is a replica of the promoted one.
			require.Eventually(t, func() bool {
				v, err := owner.Do(t.Context(), "ROLE")
				return err == nil && v.([]any)[0] == "slave"
			}, 10*time.Second, 10*time.Millisecond, "the old primary was not demoted")
			// The waiter is subscribed in the shard again: on the
			// promoted replica, or on the old primary, now its replica,
			// which lets a client subscribe a shard channel of its
			// primary's slots (Redis routes SSUBSCRIBE like a read) and
			// hears what the primary publishes there (SPUBLISH reaches the
			// shard's every node). A client whose map still named the old
			// primary when it subscribed again stays there: under -race at
			// a load average of 15-40 on 2 cores, 3 of 120 subtests (goredis
			// Open, rueidis Open, valkeygo New) had the subscription there
			// and none on the promoted replica 15s later, while the others
			// moved to it in 0.1-0.9s. The release below, published on the
			// promoted replica, is what the waiter must hear.
			// 15s: room for a loaded machine (a CI run at ab28835 failed
			// goredis Open at 10s), below the waiter's backoff (20s),
			// whose attempt would meet the MOVED that the old rueidis
			// clients needed (they were subscribed nowhere).
			demoted := time.Now()
			if !assert.Eventually(t, func() bool { return numsubOn(t, replica, channel)+numsubOn(t, owner, channel) == 1 },
				15*time.Second, 10*time.Millisecond, "the waiter is not subscribed in the key's shard after the failover") {
				// Where the subscription is, and each server's view.
				for _, s := range append(cl.Servers(), replica) {
					role, _ := s.Do(t.Context(), "ROLE")
					nodes, _ := s.Do(t.Context(), "CLUSTER", "NODES")
					t.Logf("%s: ROLE %v, SHARDNUMSUB %d, CLUSTER NODES:\n%v", s.Addr(), role, numsubOn(t, s, channel), nodes)
				}
				t.FailNow()
			}
			t.Logf("subscribed in the shard %v after the old primary was demoted (on the promoted replica: %d, on the old primary: %d)",
				time.Since(demoted).Round(time.Millisecond), numsubOn(t, replica, channel), numsubOn(t, owner, channel))

			// The release, where the slot is served now.
			require.Eventually(t, func() bool { // CLUSTERDOWN until the cluster agrees
				_, err := replica.Do(t.Context(), "DEL", key)
				return err == nil
			}, 10*time.Second, 10*time.Millisecond, "DEL on the promoted replica")
			_, err = replica.Do(t.Context(), "SPUBLISH", channel, "")
			require.NoError(t, err)
			select {
			case err := <-waited:
				require.NoError(t, err)
			case <-time.After(8 * time.Second): // far below the backoff
				t.Fatal("the waiter did not get the lock 8s after the release")
			}
		})
	}
}

// joinAsReplica starts a cluster-enabled server, has it meet the cluster
// and replicate primary, and returns it once its replication link is up.
func joinAsReplica(t *testing.T, cl *redistest.Cluster, primary *redistest.Server) *redistest.Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bus := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	srv := redistest.NewServer(t,
		redistest.WithConfig("cluster-enabled", "yes"),
		redistest.WithConfig("cluster-config-file", "nodes.conf"),
		redistest.WithConfig("cluster-port", strconv.Itoa(bus)),
		redistest.WithConfig("repl-diskless-sync-delay", "0"))
	host, _, err := net.SplitHostPort(primary.Addr())
	require.NoError(t, err)
	pbus := busPort(t, primary)
	_, err = srv.Do(t.Context(), "CLUSTER", "MEET", host, portOf(t, primary.Addr()), strconv.Itoa(pbus))
	require.NoError(t, err)
	id, err := primary.Do(t.Context(), "CLUSTER", "MYID")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := srv.Do(t.Context(), "CLUSTER", "REPLICATE", id.(string))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the new server does not know the primary")
	require.Eventually(t, func() bool {
		v, err := srv.Do(t.Context(), "INFO", "replication")
		s, _ := v.(string)
		return err == nil && strings.Contains(s, "master_link_status:up")
	}, 10*time.Second, 50*time.Millisecond, "the new replica did not sync")
	myID, err := srv.Do(t.Context(), "CLUSTER", "MYID")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, s := range cl.Servers() {
			v, err := s.Do(t.Context(), "CLUSTER", "NODES")
			text, _ := v.(string)
			if err != nil || !strings.Contains(text, myID.(string)+" ") {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "the cluster does not know the new replica")
	return srv
}

// busPort returns the cluster bus port of srv.
func busPort(t *testing.T, srv *redistest.Server) int {
	v, err := srv.Do(t.Context(), "CONFIG", "GET", "cluster-port")
	require.NoError(t, err)
	a := v.([]any)
	p, err := strconv.Atoi(a[1].(string))
	require.NoError(t, err)
	return p
}

func portOf(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}
