package redlock_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	valkeylib "github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// clusterNodes make a node that is a whole Redis Cluster: with a driver's New
// over a cluster client made as the driver's package doc recommends ("NAME
// New", see userClusterClients), or with Open on the cluster's address ("NAME
// Open").
var clusterNodes = map[string]func(t *testing.T, cl *redistest.Cluster) driver.Node{
	"goredis New":   newOverUserCluster("goredis"),
	"rueidis New":   newOverUserCluster("rueidis"),
	"valkeygo New":  newOverUserCluster("valkeygo"),
	"goredis Open":  openClusterNode(goredis.Driver{}),
	"rueidis Open":  openClusterNode(rueidis.Driver{}),
	"valkeygo Open": openClusterNode(valkeygo.Driver{}),
}

// newOverUserCluster makes a node with New over a cluster client of the
// named driver's library (userClusterClients).
func newOverUserCluster(name string) func(t *testing.T, cl *redistest.Cluster) driver.Node {
	return func(t *testing.T, cl *redistest.Cluster) driver.Node {
		n, _ := userClusterClients[name](t, cl)
		return n
	}
}

func openClusterNode(d driver.Driver) func(t *testing.T, cl *redistest.Cluster) driver.Node {
	return func(t *testing.T, cl *redistest.Cluster) driver.Node {
		n, err := d.Open(cl.URL())
		require.NoError(t, err)
		return n
	}
}

// driverOf returns the driver's name in a name of clusterNodes.
func driverOf(name string) string {
	d, _, _ := strings.Cut(name, " ")
	return d
}

// stack logs every goroutine's stack.
func logStacks(t *testing.T, what string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Logf("%s:\n%s", what, buf)
}

// closeWithin closes c and requires it to return within bound, logging how
// long it took, and the goroutines if it takes more than a second.
func closeWithin(t *testing.T, c *redlock.Client, bound time.Duration) {
	t.Helper()
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	var err error
	select {
	case err = <-closed:
	case <-time.After(time.Second):
		logStacks(t, "Close still runs after 1s")
		err = <-closed
	}
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("Close took %v", took)
	require.Less(t, took, bound, "Close took %v", took)
}

// lockInBackground calls c.Lock(t.Context(), key) on a goroutine of its own
// and returns the channel that receives its error.
func lockInBackground(t *testing.T, c *redlock.Client, key string) <-chan error {
	waiter := make(chan error, 1)
	go func() {
		_, err := c.Lock(t.Context(), key)
		waiter <- err
	}()
	return waiter
}

// keyOnCluster starts a cluster of two shards and returns it with the key the
// tests lock, its release channel, and the primary of the shard that serves
// that channel.
func keyOnCluster(t *testing.T) (cl *redistest.Cluster, key, channel string, owner *redistest.Server) {
	cl = redistest.NewCluster(t, 2)
	key = "k"
	channel = driver.ReleaseChannel(key)
	return cl, key, channel, cl.SlotShard(redistest.KeySlot(channel)).Primary()
}

// numsubOn returns the subscribers of channel on srv (PUBSUB SHARDNUMSUB).
func numsubOn(t *testing.T, srv *redistest.Server, channel string) int64 {
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	v, err := srv.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel)
	if err != nil {
		return -1
	}
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return -1
	}
	n, _ := a[1].(int64)
	return n
}

// subscribedOnEvery waits, up to 5s, until one client is subscribed to
// channel on every server, and fails the test otherwise.
func subscribedOnEvery(t *testing.T, servers []*redistest.Server, channel string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if numsubOn(t, s, channel) != 1 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the waiter did not subscribe on every server")
}

// heldElsewhere holds key through another Client of the named driver, and
// returns a Client over the cluster node that newNode makes, with
// nodeTimeout; once the test is over, it checks that no goroutine of the
// library is left.
func heldElsewhere(t *testing.T, cl *redistest.Cluster, name string, newNode func(*testing.T, *redistest.Cluster) driver.Node, key string, nodeTimeout time.Duration) *redlock.Client {
	ignore := []goleak.Option{
		goleak.IgnoreCurrent(),
		// The rueidis family's refresh of the slot map sleeps in
		// goroutines of its own (before a refresh; before closing a
		// connection it no longer uses), which Close leaves.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*clusterClient)._refresh.func2"),
	}
	if strings.HasSuffix(name, " New") {
		// A refresh of the user's client (after a call failed on the
		// stalled shard) dials the shard again, with no deadline but
		// the client's dial timeout: resumed as the test ends, the shard
		// answers after the client's Close, and the library stores the
		// connection over the one that Close marked closed, where it
		// stays open with its two goroutines. The library's, in the
		// user's client; a node of Open's client never redials (see
		// rueidiscore's dial).
		ignore = append(ignore,
			goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._background"),
			goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*pipe)._background.func1"),
			goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*pipe)._background"),
			goleak.IgnoreAnyFunction("github.com/valkey-io/valkey-go.(*pipe)._background.func1"))
	}
	t.Cleanup(func() { goleak.VerifyNone(t, ignore...) })
	// The holder's first call connects to the cluster: a node timeout that
	// a loaded machine does not exhaust (with the default 200ms, its
	// TryLock timed out under load; its timing is not what is tested).
	holder, err := redlock.Open(driverOf(name), []string{cl.URL()}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { holder.Close() })
	l, err := holder.TryLock(t.Context(), key)
	require.NoError(t, err)
	t.Cleanup(func() { l.Unlock(context.Background()) })
	c, err := redlock.New([]driver.Node{newNode(t, cl)}, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
	require.NoError(t, err)
	return c
}

// requireClosed wants the waiter's Lock to return ErrClosed within 2s.
func requireClosed(t *testing.T, waiter <-chan error) {
	t.Helper()
	select {
	case err := <-waiter:
		require.ErrorIs(t, err, redlock.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter's Lock did not return after Close")
	}
}

// Close of a Client over a node that is a Redis Cluster, while a waiter is
// subscribed on the shard that serves its key and that shard's primary is
// stalled: Close returns after about its node timeout, and the waiter's
// Lock returns ErrClosed.
func TestRedisClusterCloseWithSubscriptionStalled(t *testing.T) {
	cl, key, channel, owner := keyOnCluster(t)
	for name, newNode := range clusterNodes {
		t.Run(name, func(t *testing.T) {
			const nodeTimeout = 50 * time.Millisecond
			c := heldElsewhere(t, cl, name, newNode, key, nodeTimeout)
			waiter := lockInBackground(t, c, key)
			require.Eventually(t, func() bool { return numsubOn(t, owner, channel) == 1 },
				5*time.Second, 10*time.Millisecond, "the waiter did not subscribe")
			require.NoError(t, owner.Pause())
			defer func() {
				owner.Resume()
				require.Eventually(t, func() bool { return numsubOn(t, owner, channel) == 0 },
					5*time.Second, 10*time.Millisecond, "still subscribed after Close")
			}()
			closeWithin(t, c, 900*time.Millisecond) // the node timeout is 50ms
			requireClosed(t, waiter)
		})
	}
}

// Close of a Client over a node that is a Redis Cluster while the waiter's
// subscription is being dialed to the stalled shard that serves its key.
func TestRedisClusterCloseWhileSubscriptionDialsStalled(t *testing.T) {
	cl, key, _, owner := keyOnCluster(t)
	for name, newNode := range clusterNodes {
		t.Run(name, func(t *testing.T) {
			const nodeTimeout = 50 * time.Millisecond
			c := heldElsewhere(t, cl, name, newNode, key, nodeTimeout)
			// The client connects while the cluster answers: Lock, whose
			// attempts its first connection may outlast under load (the
			// node timeout is 50ms).
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			other, err := c.Lock(ctx, "other")
			require.NoError(t, err)
			require.NoError(t, other.Unlock(t.Context()))
			require.NoError(t, owner.Pause())
			defer owner.Resume()
			ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = c.Lock(ctx, key)
			require.Error(t, err)
			require.Less(t, time.Since(start), 2*time.Second, "Lock with a 300ms context on a stalled shard")
			waiter := lockInBackground(t, c, key)
			time.Sleep(100 * time.Millisecond)
			closeWithin(t, c, 2*time.Second) // the node timeout is 50ms
			requireClosed(t, waiter)
		})
	}
}

// userClusterClients make a cluster client as the driver's doc recommends,
// and a node with New over it; close closes the client.
var userClusterClients = map[string]func(t *testing.T, cl *redistest.Cluster) (n driver.Node, close func()){
	"goredis": func(t *testing.T, cl *redistest.Cluster) (driver.Node, func()) {
		rc := goredislib.NewClusterClient(&goredislib.ClusterOptions{Addrs: cl.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { rc.Close() })
		return goredis.New(rc), func() { rc.Close() }
	},
	"rueidis": func(t *testing.T, cl *redistest.Cluster) (driver.Node, func()) {
		rc, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: cl.Seeds(), DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		return rueidis.New(rc), rc.Close
	},
	"valkeygo": func(t *testing.T, cl *redistest.Cluster) (driver.Node, func()) {
		vc, err := valkeylib.NewClient(valkeylib.ClientOption{InitAddress: cl.Seeds(), DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		t.Cleanup(vc.Close)
		return valkeygo.New(vc), vc.Close
	},
}

// The user closes their cluster client while a waiter is subscribed, then
// locks and closes the Client: nothing hangs.
func TestRedisClusterUserClientClosedFirst(t *testing.T) {
	cl, key, channel, owner := keyOnCluster(t)
	for name, newNode := range userClusterClients {
		t.Run(name, func(t *testing.T) {
			_, err := owner.Do(t.Context(), "SET", key, "someone", "PX", "60000")
			require.NoError(t, err)
			defer owner.Do(context.Background(), "DEL", key)
			n, closeClient := newNode(t, cl)
			c, err := redlock.New([]driver.Node{n}, redlock.WithTTL(time.Minute))
			require.NoError(t, err)
			waiter := lockInBackground(t, c, key)
			require.Eventually(t, func() bool { return numsubOn(t, owner, channel) == 1 },
				5*time.Second, 10*time.Millisecond, "the waiter did not subscribe")
			closeClient()
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			start := time.Now()
			_, err = c.Lock(ctx, "other")
			cancel()
			t.Logf("Lock on a closed client: %v after %v", err, time.Since(start))
			require.Less(t, time.Since(start), 2*time.Second)
			start = time.Now()
			ctx, cancel = context.WithTimeout(t.Context(), 500*time.Millisecond)
			err = c.Do(ctx, "other2", func(context.Context) error { return nil })
			cancel()
			t.Logf("Do on a closed client: %v after %v", err, time.Since(start))
			require.Less(t, time.Since(start), 2*time.Second)
			closeWithin(t, c, 2*time.Second)
			require.NoError(t, c.Close(), "Close twice")
			requireClosed(t, waiter)
		})
	}
}
