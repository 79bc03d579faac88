package goredis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

func TestRedisConformance(t *testing.T) { conformance.RunRedis(t, goredis.Driver{}) }

func TestConformanceNew(t *testing.T) {
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

// open opens a node for addr through the driver and closes it when the test
// ends.
func open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := goredis.Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

// calls runs every Node method on n with ctx and returns their errors.
func calls(ctx context.Context, n driver.Node, key string) map[string]error {
	errs := make(map[string]error)
	_, errs["SetNX"] = n.SetNX(ctx, key, "v", time.Minute)
	_, errs["EvalRelease"] = n.EvalRelease(ctx, key, "v")
	_, errs["Extend"] = n.Extend(ctx, key, "v", time.Minute)
	return errs
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
	for call, err := range calls(t.Context(), n, "k") {
		require.ErrorIs(t, err, goredis.ErrClosed, call)
	}
	require.NoError(t, rdb.Ping(t.Context()).Err(), "New's Close closed the caller's client")
}

func TestNewNil(t *testing.T) {
	const want = "goredis: New was given a nil client"
	for _, n := range []driver.Node{goredis.New(nil), goredis.New((*redis.Client)(nil))} {
		for call, err := range calls(t.Context(), n, "k") {
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
	} {
		rdb := redis.NewClient(&tc.opts)
		require.Equal(t, tc.want, fmt.Sprint(goredis.New(rdb)), "New(client on %s).String()", tc.opts.Addr)
		require.NoError(t, rdb.Close())
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "10.0.0.1:6379"}})
	defer ring.Close()
	require.Equal(t, "goredis", fmt.Sprint(goredis.New(ring)))
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
	for call, err := range calls(ctx, n, "k") {
		require.Error(t, err, call)
		require.NotContains(t, err.Error(), password, call)
	}
	require.NoError(t, ctx.Err(), "calls on a killed server waited for their deadline")
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
	require.Less(t, time.Since(start), 350*time.Millisecond)
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
	for call, err := range calls(ctx, n, "k") {
		require.ErrorIs(t, err, goredis.ErrClosed, call)
	}
}
