package goredis_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/internal/pubsub/pubsubtest"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The tests that only wait on servers of their own (the conformance suites,
// the scenarios of seeds of two clusters) run in parallel with one another,
// after the others, which run alone: those that bound a call's time while a
// shard hangs, those that count or replace the package's registry of gates
// (seeds.go's gated, onNewNode), and the pub/sub suites, which look for
// goroutines left in the whole process (goleak).
func TestRedisConformance(t *testing.T) {
	t.Parallel()
	conformance.RunRedis(t, goredis.Driver{}, clusterOptions...)
}

func TestConformanceNew(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t *testing.T) driver.Node {
		rdb := redis.NewClient(&redis.Options{
			Addr:                  redistest.NewServer(t).Addr(),
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
		})
		n := goredis.New(rdb)
		t.Cleanup(func() {
			n.Close()
			// The caller's client outlives the node and still works.
			require.NoError(t, rdb.Ping(context.Background()).Err())
			require.NoError(t, rdb.Close())
		})
		return n
	})
}

func TestPubSub(t *testing.T) {
	t.Run("Open", func(t *testing.T) { pubsubtest.RunOpen(t, goredis.Driver{}) })
	t.Run("New", func(t *testing.T) {
		pubsubtest.Run(t, func(t *testing.T, addr string) driver.Node {
			rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			n := goredis.New(rdb)
			t.Cleanup(func() {
				n.Close()
				rdb.Close()
			})
			return n
		})
	})
}

// open opens a node for addr through the driver and closes it when the test
// ends.
func open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := goredis.Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

func TestRegistered(t *testing.T) {
	require.Contains(t, redlock.Drivers(), "goredis")
}

func TestNewDoesNotCloseClient(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	n := goredis.New(rdb)
	require.NoError(t, n.Close())
	require.NoError(t, n.Close(), "a second Close")
	for call, err := range conformance.Calls(t.Context(), n, "k") {
		require.ErrorIs(t, err, driver.ErrClosed, call)
	}
	require.NoError(t, rdb.Ping(t.Context()).Err(), "New's Close closed the caller's client")
}

func TestNewNil(t *testing.T) {
	const want = "goredis: New was given a nil client"
	for _, n := range []driver.Node{goredis.New(nil), goredis.New((*redis.Client)(nil))} {
		for call, err := range conformance.Calls(t.Context(), n, "k") {
			require.EqualError(t, err, want, call)
		}
		require.EqualError(t, n.Close(), want, "Close")
	}
}

func TestString(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7000": "127.0.0.1:7000",
		"redis://:p%40ss%2Fword@127.0.0.1:7000/2": "redis://:xxxxx@127.0.0.1:7000/2",
	} {
		require.Equal(t, want, fmt.Sprint(open(t, addr)), "Open(%q).String()", addr)
	}
	for _, tc := range []struct {
		opts redis.Options
		want string
	}{
		{redis.Options{Addr: "10.0.0.1:6380"}, "10.0.0.1:6380"},
		{redis.Options{Addr: "10.0.0.1:6380", Password: "s3cret", DB: 3}, "redis://:xxxxx@10.0.0.1:6380/3"},
		{redis.Options{Addr: "[::1]:6380", Username: "alice", Password: "s3cret"}, "redis://alice:xxxxx@[::1]:6380"},
		{redis.Options{Addr: "10.0.0.1:6380", Password: "s3cret", TLSConfig: &tls.Config{}}, "rediss://:xxxxx@10.0.0.1:6380"},
	} {
		rdb := redis.NewClient(&tc.opts)
		require.Equal(t, tc.want, fmt.Sprint(goredis.New(rdb)), "New(client on %s).String()", tc.opts.Addr)
		require.NoError(t, rdb.Close())
	}
	require.Equal(t, "goredis", fmt.Sprint(goredis.New(nil)))
}

// A node over a Ring is named by its shards' addresses, sorted, without
// credentials: the same name for every Ring over the same servers (a program
// that keeps making them adds no metric series; redlock.New refuses two of
// them as one node given twice), distinct names for distinct servers. A node
// over a client of the caller's type is numbered, or named by NewNamed.
func TestStringRing(t *testing.T) {
	ring := func(db int, addrs ...string) driver.Node {
		m := make(map[string]string, len(addrs))
		for i, a := range addrs {
			m[fmt.Sprint("shard", i)] = a
		}
		r := redis.NewRing(&redis.RingOptions{Addrs: m, Username: "alice", Password: "s3cret", DB: db})
		t.Cleanup(func() { r.Close() })
		return goredis.New(r)
	}
	a := ring(0, "10.0.0.2:6379", "10.0.0.1:6379")
	require.Equal(t, "ring(10.0.0.1:6379,10.0.0.2:6379)", fmt.Sprint(a))
	require.Equal(t, fmt.Sprint(a), fmt.Sprint(ring(0, "10.0.0.1:6379", "10.0.0.2:6379")), "a second Ring over the same servers")
	require.Equal(t, "ring(10.0.0.1:6379,10.0.0.2:6379)/3", fmt.Sprint(ring(3, "10.0.0.1:6379", "10.0.0.2:6379")))
	for _, n := range []driver.Node{a, ring(3, "10.0.0.1:6379")} {
		require.NotContains(t, fmt.Sprint(n), "s3cret")
		require.NotContains(t, fmt.Sprint(n), "alice")
	}
	// Distinct servers, distinct names: redlock.New takes the nodes.
	_, err := redlock.New([]driver.Node{a, ring(0, "10.0.0.3:6379"), ring(0, "10.0.0.4:6379", "10.0.0.5:6379")})
	require.NoError(t, err)
	// The same servers twice: one node given twice.
	_, err = redlock.New([]driver.Node{ring(0, "10.0.0.1:6379", "10.0.0.2:6379"), ring(0, "10.0.0.2:6379", "10.0.0.1:6379"), ring(0, "10.0.0.6:6379")})
	require.ErrorContains(t, err, "nodes 1 and 2 are both ring(10.0.0.1:6379,10.0.0.2:6379)")

	// A client of the caller's type: numbered, so that redlock.New tells
	// such nodes apart, or named by NewNamed, without credentials.
	rdb := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"})
	t.Cleanup(func() { rdb.Close() })
	require.Regexp(t, `^goredis-\d+$`, fmt.Sprint(goredis.New(wrapped{rdb})))
	require.NotEqual(t, fmt.Sprint(goredis.New(wrapped{rdb})), fmt.Sprint(goredis.New(wrapped{rdb})))
	require.Equal(t, "redis://xxxxx@10.0.0.1:6379", fmt.Sprint(goredis.NewNamed(wrapped{rdb}, "redis://alice:s3cret@10.0.0.1:6379")))
	require.Equal(t, "primary-1", fmt.Sprint(goredis.NewNamed(wrapped{rdb}, "primary-1")))
	require.Regexp(t, `^goredis-\d+$`, fmt.Sprint(goredis.NewNamed(wrapped{rdb}, "")), "an empty name leaves New's")
	require.Equal(t, "ring(10.0.0.1:6379)", fmt.Sprint(goredis.NewNamed(nil, "ring(10.0.0.1:6379)")), "named over a nil client too")
}

// wrapped is a client of a caller's type, whose servers New cannot learn.
type wrapped struct{ *redis.Client }

// A node over a client other than *redis.Client (a Ring's pub/sub may reach
// another server than the one that publishes) refuses to subscribe, and its
// waiters poll; it still publishes releases.
func TestSubscribeNeedsClient(t *testing.T) {
	srv := redistest.NewServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr()}})
	defer ring.Close()
	n := goredis.New(ring).(driver.Notifier)
	_, err := n.Subscribe(t.Context(), "k", make(chan struct{}, 1))
	require.ErrorContains(t, err, "*redis.Client")
	ok, err := n.ReleaseNotify(t.Context(), "k", "v")
	require.NoError(t, err)
	require.False(t, ok)
}

// Open's client dials once per call (DialerRetries 1): a call on a server that
// went away fails at once instead of redialing until its deadline, and its
// error does not show the password, even one that needs escaping in the URL.
func TestServerKilled(t *testing.T) {
	const password = "p@ss/w:rd"
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	n := open(t, srv.URL())
	_, err := n.SetNX(t.Context(), "k", "v", time.Minute)
	require.NoError(t, err)
	require.NoError(t, srv.Kill())

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for call, err := range conformance.Calls(ctx, n, "k") {
		require.Error(t, err, call)
		require.NotContains(t, err.Error(), password, call)
	}
	require.NoError(t, ctx.Err(), "calls on a killed server waited for their deadline")
}

// A node over the user's client, which its Close leaves open, sends none of
// the calls still queued at Close.
func TestNewCloseSendsNoQueuedCall(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	conformance.QueuedAtClose(t, srv, goredis.New(rdb))
}

// A client from New without ContextTimeoutEnabled ignores the context's
// deadline: the node must watch it.
func TestNewWithoutContextTimeout(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	n := goredis.New(rdb)
	_, err := n.SetNX(t.Context(), "k", "v", time.Minute) // connect first
	require.NoError(t, err)

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = n.Extend(ctx, "k", "v", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// Well below go-redis's read timeout (3s), which a node that did not
	// watch ctx would wait for, with room for a loaded machine.
	require.Less(t, time.Since(start), 1500*time.Millisecond)
}

func TestCloseDuringCalls(t *testing.T) {
	srv := redistest.NewServer(t)
	n, err := goredis.Driver{}.Open(srv.Addr())
	require.NoError(t, err)
	ctx := t.Context()
	done := make(chan error)
	for i := range 8 {
		go func() {
			var err error
			for err == nil {
				_, err = n.SetNX(ctx, fmt.Sprint("k", i), "v", time.Minute)
			}
			done <- err
		}()
	}
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, n.Close())
	for range 8 {
		require.Error(t, <-done)
	}
	for call, err := range conformance.Calls(ctx, n, "k") {
		require.ErrorIs(t, err, driver.ErrClosed, call)
	}
}

// New over a *redis.ClusterClient a caller configured: three clusters, so
// that Redlock/ThreeNodes has three independent nodes.
func TestConformanceNewCluster(t *testing.T) {
	t.Parallel()
	clusters := redistest.NewClusters(t, 3, 2)
	next := 0
	conformance.Run(t, func(t *testing.T) driver.Node {
		cl := clusters[next%len(clusters)]
		next++
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Seeds(), ContextTimeoutEnabled: true, MaxRetries: -1})
		n := goredis.New(rdb)
		t.Cleanup(func() {
			n.Close()
			require.NoError(t, rdb.Close(), "the caller's client outlives the node")
		})
		return n
	})
}
