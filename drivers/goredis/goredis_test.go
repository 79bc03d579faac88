package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
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

// open opens a node for addr through the driver and closes it when the test
// ends (the test may already have closed it).
func open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := goredis.Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node {
		return open(t, redistest.NewServer(t).Addr())
	})
}

func TestConformanceNew(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node {
		srv := redistest.NewServer(t)
		rdb := redis.NewClient(&redis.Options{
			Addr:                  srv.Addr(),
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

func TestNewDoesNotCloseClient(t *testing.T) {
	srv := redistest.NewServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	n := goredis.New(rdb)
	require.Equal(t, srv.Addr(), fmt.Sprint(n))
	require.NoError(t, n.Close())
	require.NoError(t, n.Close(), "a second Close")
	_, err := n.SetNX(t.Context(), "k", "v", time.Second)
	require.ErrorIs(t, err, goredis.ErrClosed)
	require.NoError(t, rdb.Ping(t.Context()).Err(), "New's Close closed the caller's client")
}

func TestNewString(t *testing.T) {
	for _, tc := range []struct {
		opts redis.Options
		want string
	}{
		{redis.Options{Addr: "10.0.0.1:6380"}, "10.0.0.1:6380"},
		{redis.Options{Addr: "10.0.0.1:6380", Password: "s3cret", DB: 3}, "redis://:xxxxx@10.0.0.1:6380/3"},
		{redis.Options{Addr: "[::1]:6380", Username: "alice", Password: "s3cret"}, "redis://alice:xxxxx@[::1]:6380"},
	} {
		rdb := redis.NewClient(&tc.opts)
		require.Equal(t, tc.want, fmt.Sprint(goredis.New(rdb)))
		require.NoError(t, rdb.Close())
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "10.0.0.1:6379"}})
	defer ring.Close()
	require.Equal(t, "goredis", fmt.Sprint(goredis.New(ring)))
}

func TestOpenString(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7000":                         "127.0.0.1:7000",
		"redis://127.0.0.1:7000":                 "127.0.0.1:7000",
		"redis://:s3cret@127.0.0.1:7000/2":       "redis://:xxxxx@127.0.0.1:7000/2",
		"redis://alice:s3cret@[::1]:7000":        "redis://alice:xxxxx@[::1]:7000",
		"redis://alice@db.example.com:7000/1":    "redis://alice@db.example.com:7000/1",
		"redis://:p%40ss%2Fword@127.0.0.1:7000/": "redis://:xxxxx@127.0.0.1:7000",
	} {
		require.Equal(t, want, fmt.Sprint(open(t, addr)), "Open(%q).String()", addr)
	}
}

func TestOpenMalformed(t *testing.T) {
	for _, addr := range []string{"", "redis://:s3cret@host:notaport", "rediss://:s3cret@host:6379", "redis://:s3cret@host:6379/x", "http://:s3cret@host"} {
		n, err := goredis.Driver{}.Open(addr)
		require.Error(t, err, "Open(%q)", addr)
		require.Nil(t, n)
		require.NotContains(t, err.Error(), "s3cret")
	}
}

func TestPassword(t *testing.T) {
	const password = "p@ss/w:rd"
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	ctx := t.Context()

	n := open(t, srv.URL())
	require.NotContains(t, fmt.Sprint(n), password)
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	for _, addr := range []string{
		"redis://:wrong-pw@" + srv.Addr(),
		"redis://" + srv.Addr(), // no password
	} {
		n := open(t, addr)
		_, err := n.SetNX(ctx, "k2", "v", time.Minute)
		require.Error(t, err, "SetNX through %s", n)
		require.NotContains(t, err.Error(), "wrong-pw")
		require.NotContains(t, err.Error(), password)
		_, err = n.EvalRelease(ctx, "k", "v")
		require.Error(t, err)
	}
}

func TestDB(t *testing.T) {
	srv := redistest.NewServer(t)
	ctx := t.Context()
	n := open(t, "redis://"+srv.Addr()+"/2")
	ok, err := n.SetNX(ctx, "db-key", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	for db, want := range map[int]int64{0: 0, 2: 1} {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: db})
		got, err := rdb.Exists(ctx, "db-key").Result()
		rdb.Close()
		require.NoError(t, err)
		require.Equal(t, want, got, "EXISTS db-key in DB %d", db)
	}
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// calls runs every Node method on n with ctx and returns their errors.
func calls(ctx context.Context, n driver.Node) map[string]error {
	errs := make(map[string]error)
	_, errs["SetNX"] = n.SetNX(ctx, "k", "v", time.Minute)
	_, errs["EvalRelease"] = n.EvalRelease(ctx, "k", "v")
	_, errs["Extend"] = n.Extend(ctx, "k", "v", time.Minute)
	return errs
}

func TestServerDown(t *testing.T) {
	start := time.Now()
	n := open(t, freeAddr(t))
	require.Less(t, time.Since(start), 100*time.Millisecond, "Open blocked")

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start = time.Now()
	for call, err := range calls(ctx, n) {
		require.Error(t, err, call)
	}
	require.Less(t, time.Since(start), time.Second, "calls on a down server outlived their deadline")
}

func TestServerKilled(t *testing.T) {
	srv := redistest.NewServer(t)
	n := open(t, srv.Addr())
	_, err := n.SetNX(t.Context(), "k", "v", time.Minute)
	require.NoError(t, err)
	require.NoError(t, srv.Kill())

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for call, err := range calls(ctx, n) {
		require.Error(t, err, call)
	}
	require.NoError(t, ctx.Err(), "calls on a killed server waited for their deadline")
}

// stalled returns a node on a paused server.
func stalled(t *testing.T) (*redistest.Server, driver.Node) {
	srv := redistest.NewServer(t)
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	start := time.Now()
	n := open(t, srv.Addr())
	require.Less(t, time.Since(start), 100*time.Millisecond, "Open blocked")
	return srv, n
}

func TestServerPaused(t *testing.T) {
	const deadline = 200 * time.Millisecond
	srv, n := stalled(t)
	for name, call := range map[string]func(ctx context.Context) error{
		"SetNX": func(ctx context.Context) error {
			_, err := n.SetNX(ctx, "k", "v", time.Minute)
			return err
		},
		"EvalRelease": func(ctx context.Context) error {
			_, err := n.EvalRelease(ctx, "k", "v")
			return err
		},
		"Extend": func(ctx context.Context) error {
			_, err := n.Extend(ctx, "k", "v", time.Minute)
			return err
		},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		err := call(ctx)
		elapsed := time.Since(start)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.Less(t, elapsed, deadline+150*time.Millisecond, "%s on a paused server returned after %v", name, elapsed)
	}

	require.NoError(t, srv.Resume())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ok, err := n.SetNX(ctx, "after-resume", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
}

// A cancellation, unlike a deadline, does not reach go-redis's sockets: the
// node must still return promptly.
func TestServerPausedCanceled(t *testing.T) {
	_, n := stalled(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 300*time.Millisecond)
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

func TestReconnect(t *testing.T) {
	srv := redistest.NewServer(t)
	n := open(t, srv.Addr())
	ctx := t.Context()
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = srv.Do(ctx, "CLIENT", "KILL", "TYPE", "normal")
	require.NoError(t, err)
	// The first call may fail on the dead connection (nothing is retried);
	// a later one must work on a new connection.
	var released bool
	for range 3 {
		if released, err = n.EvalRelease(ctx, "k", "v"); err == nil {
			break
		}
	}
	require.NoError(t, err)
	require.True(t, released)
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
	for call, err := range calls(ctx, n) {
		require.ErrorIs(t, err, goredis.ErrClosed, call)
	}
}

func TestRegistered(t *testing.T) {
	require.True(t, slices.Contains(redlock.Drivers(), "goredis"), "drivers %v", redlock.Drivers())

	servers := redistest.NewServers(t, 3)
	c, err := redlock.Open("goredis", redistest.Addrs(servers))
	require.NoError(t, err)
	defer c.Close()
	ctx := t.Context()
	l, err := c.TryLock(ctx, "registered")
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "registered")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, l.Unlock(ctx))
}

func TestOpenErrorHidesPassword(t *testing.T) {
	_, err := redlock.Open("goredis", []string{"127.0.0.1:1", "redis://:s3cret@127.0.0.1:notaport"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

// A node whose server is down is named without credentials in redlock's
// errors.
func TestNodeErrorHidesPassword(t *testing.T) {
	addrs := []string{"redis://:s3cret@" + freeAddr(t), "redis://:s3cret@" + freeAddr(t), "redis://:s3cret@" + freeAddr(t)}
	c, err := redlock.Open("goredis", addrs, redlock.WithNodeTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.TryLock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var nerr *redlock.NodeError
	require.True(t, errors.As(err, &nerr), "%v", err)
	require.NotContains(t, err.Error(), "s3cret")
}
