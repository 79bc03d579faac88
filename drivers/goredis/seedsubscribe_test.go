package goredis_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestNewClusterClientSeedDownAtFirstSubscribe is
// TestNewClusterClientSeedDownAtFirstUse with the node's first call a
// Subscribe (a waiter's subscription on a node whose first SET had not yet
// started, or still waited for the seeds' check): the subscription reads
// the slot map through the caller's client (MasterForKey), which makes node
// clients for the seeds it tries, the down seed's among them when it tries
// it first. That node client must be gated as the later ones are: once the
// seed comes up and the client falls back to its seeds, the node must not
// lock on the second cluster while a Client over the first holds the key.
func TestNewClusterClientSeedDownAtFirstSubscribe(t *testing.T) {
	a := redistest.NewCluster(t, 1)
	b := redistest.NewCluster(t, 1)
	sa, sb := a.Seeds()[0], b.Seeds()[0]
	g := &gate{down: map[string]bool{sb: true}, conns: map[string][]net.Conn{}}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{sa, sb}, Dialer: g.dial,
		ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	n := goredis.New(cc)
	// go-redis tries the seeds in a random order: the down seed first in
	// about half of the runs.
	stop, err := n.(driver.Notifier).Subscribe(t.Context(), "first", make(chan struct{}, 1))
	require.NoError(t, err)
	stop()
	c1, err := redlock.New([]driver.Node{n}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c1.Close() })
	l, err := c1.TryLock(t.Context(), "warm")
	require.NoError(t, err, "seeds of two clusters, the second down: the check vouched for the first")
	require.NoError(t, l.Unlock(t.Context()))

	hc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: a.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { hc.Close() })
	c2, err := redlock.New([]driver.Node{goredis.New(hc)}, redlock.WithTTL(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { c2.Close() })
	const key = "seed-later"
	held, err := c2.TryLock(t.Context(), key)
	require.NoError(t, err)
	defer held.Unlock(context.Background())

	g.set(sb, false)
	g.set(sa, true)
	_, port, _ := net.SplitHostPort(sa)
	g.set(":"+port, true) // as CLUSTER SLOTS names it, without announce-ip
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		_, last = c1.TryLock(ctx, key)
		require.Error(t, last, "a lock held on the first cluster was granted on the second, read from the seed not checked")
		if errors.Is(last, driver.ErrSeedsOfTwoClusters) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("last error: %v", last)
}
