package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Servers of Redis Clusters of two shards given as nodes of one server each
// (no ?cluster=true), beside a plain server, through every driver: a key of
// the slots those servers serve locks, with fencing, as on plain servers; a
// key of the other shard's slots gets MOVED from both, which no retry fixes
// (the nodes follow no redirection), so Lock stops at once, without waiting
// for its context, and its error says that the servers are a cluster's and
// how to give them. Before, MOVED counted as a passing failure: Lock retried
// until its context ended ("context deadline exceeded", 3 failed).
func TestOneServerNodesOnClusterServers(t *testing.T) {
	cls := redistest.NewClusters(t, 2, 2)
	plain := redistest.NewServer(t)
	addrs := []string{cls[0].Shards()[0].Primary().Addr(), cls[1].Shards()[0].Primary().Addr(), plain.Addr()}
	// keyOn returns a key whose slot shard i of both clusters serves.
	keyOn := func(i int, prefix string) string {
		for n := range 100 {
			key := cls[0].KeyOn(cls[0].Shards()[i], prefix+strings.Repeat("x", n))
			if slot := redistest.KeySlot(key); cls[1].SlotShard(slot) == cls[1].Shards()[i] {
				return key
			}
		}
		t.Fatalf("no key of a slot that shard %d of both clusters serve", i)
		return ""
	}
	own, other := keyOn(0, "own-"), keyOn(1, "other-")
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			// A node timeout of 2s: the machine is loaded, and what the
			// test checks does not depend on it.
			c, err := redlock.Open(name, addrs, redlock.WithFencing(), redlock.WithNodeTimeout(2*time.Second), redlock.WithTTL(30*time.Second))
			require.NoError(t, err)
			defer c.Close()

			l, err := c.TryLock(t.Context(), own)
			require.NoError(t, err, "a key of the slots the servers serve")
			require.NotZero(t, l.Token())
			require.NoError(t, l.Unlock(t.Context()))

			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			l, err = c.Lock(ctx, other)
			require.Error(t, err, "a key of another shard's slots")
			require.Nil(t, l)
			require.NotErrorIs(t, err, context.DeadlineExceeded, "Lock waited for its context: %v", err)
			require.NoError(t, ctx.Err(), "Lock returned when its context ended")
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, driver.ErrClusterServer)
			var votes *redlock.VoteError
			require.True(t, errors.As(err, &votes), "no VoteError in %v", err)
			require.Equal(t, 2, votes.Permanent, "%v", err)
			t.Log(err)
			msg := err.Error()
			for _, want := range []string{"2 answered MOVED, which retrying cannot fix", "MOVED ", "node of a Redis Cluster", "?cluster=true"} {
				require.Contains(t, msg, want)
			}
			for _, a := range addrs[:2] {
				require.Contains(t, msg, a, "the error does not name the node")
			}
		})
	}
}

// The Subscribe of a node of one server whose server is a cluster's, to a key
// of another shard's slots, fails as the node's lock calls on that key do:
// with an error matching driver.ErrClusterServer, for which
// driver.PermanentCode is "MOVED" (the node follows no redirection, and the
// server redirects that slot until the slot map changes). Before, the
// SSUBSCRIBE's MOVED was a passing failure ("SSUBSCRIBE: MOVED 8579 ...",
// PermanentCode ""), unlike SetNX's on the same node and key, so a waiter
// subscribed to that node again in the background, at every gap, for as long
// as it waited, where a refusal for good is asked once a wait (see
// Client.subscribeOne), through every driver.
func TestOneServerNodeSubscribeMovedIsPermanent(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	srv := c.Shards()[0].Primary()
	own, other := c.KeyOn(c.Shards()[0], "own-"), c.KeyOn(c.Shards()[1], "other-")
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			n, err := driverByName(t, name).Open(srv.Addr())
			require.NoError(t, err)
			defer n.Close()
			nn := n.(driver.Notifier)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()

			stop, err := nn.Subscribe(ctx, own, make(chan struct{}, 1))
			require.NoError(t, err, "a key of the slots the server serves")
			stop()

			_, err = n.SetNX(ctx, other, "v", time.Minute)
			require.ErrorIs(t, err, driver.ErrClusterServer)
			stop, err = nn.Subscribe(ctx, other, make(chan struct{}, 1))
			require.Nil(t, stop)
			require.ErrorIs(t, err, driver.ErrClusterServer, "as SetNX on the same key")
			require.Equal(t, "MOVED", driver.PermanentCode(err))
		})
	}
}
