package redigo_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// open opens a node for addr and closes it when the test ends.
func open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := redigo.Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

// newPool returns a pool as a caller might configure it, closed when the test
// ends.
func newPool(t *testing.T, addr string, opts ...redis.DialOption) *redis.Pool {
	p := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		},
		MaxIdle: 8,
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestConformanceOpen(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node {
		return open(t, redistest.NewServer(t).Addr())
	})
}

func TestConformanceNew(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node {
		n := redigo.New(newPool(t, redistest.NewServer(t).Addr()))
		t.Cleanup(func() { n.Close() })
		return n
	})
}

func TestPassword(t *testing.T) {
	const password = "s3cret-Pa55"
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	ctx := t.Context()

	n := open(t, srv.URL())
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotContains(t, n.(interface{ String() string }).String(), password)

	const wrong = "wr0ng-Pa55"
	bad := open(t, "redis://:"+wrong+"@"+srv.Addr())
	require.NotContains(t, bad.(interface{ String() string }).String(), wrong)
	_, err = bad.SetNX(ctx, "k2", "v", time.Minute)
	require.Error(t, err)
	require.NotContains(t, err.Error(), wrong)
	require.NotContains(t, err.Error(), password)

	none := open(t, srv.Addr())
	_, err = none.SetNX(ctx, "k3", "v", time.Minute)
	require.Error(t, err, "no password on a server that wants one")
}

func TestDatabase(t *testing.T) {
	srv := redistest.NewServer(t)
	ctx := t.Context()
	n := open(t, "redis://"+srv.Addr()+"/2")
	ok, err := n.SetNX(ctx, "in-db-2", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	c, err := redis.DialContext(ctx, "tcp", srv.Addr(), redis.DialDatabase(2))
	require.NoError(t, err)
	defer c.Close()
	v, err := redis.String(redis.DoContext(c, ctx, "GET", "in-db-2"))
	require.NoError(t, err)
	require.Equal(t, "v", v)

	v0, err := srv.Do(ctx, "EXISTS", "in-db-2") // a fresh connection on DB 0
	require.NoError(t, err)
	require.Equal(t, int64(0), v0)
}

func TestOpenMalformedHidesPassword(t *testing.T) {
	for _, addr := range []string{"", "redis://:s3cret@h:99999", "redis://u:s3cret@h:1/x", "http://u:s3cret@h:1"} {
		_, err := redigo.Driver{}.Open(addr)
		require.Error(t, err, addr)
		require.NotContains(t, err.Error(), "s3cret")
	}
}

// freeAddr returns a loopback address that nobody listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// calls runs every Node method once and returns their errors.
func calls(ctx context.Context, n driver.Node, key string) []error {
	_, e1 := n.SetNX(ctx, key, "v", time.Minute)
	_, e2 := n.EvalRelease(ctx, key, "v")
	_, e3 := n.Extend(ctx, key, "v", time.Minute)
	return []error{e1, e2, e3}
}

func TestUnreachable(t *testing.T) {
	addr := freeAddr(t)
	start := time.Now()
	n := open(t, addr)
	require.Less(t, time.Since(start), 100*time.Millisecond, "Open must not dial")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for _, err := range calls(ctx, n, "k") {
		require.Error(t, err)
	}
	require.NoError(t, ctx.Err(), "calls must fail within the deadline")
}

func TestPausedServer(t *testing.T) {
	const password = "pause-Pa55"
	srv := redistest.NewServer(t, redistest.WithPassword(password))
	pool := newPool(t, srv.Addr(), redis.DialPassword(password))
	// warm has a pooled connection, fresh must dial (and AUTH) while paused.
	warm, wrapped := open(t, srv.URL()), redigo.New(pool)
	for _, n := range []driver.Node{warm, wrapped} {
		_, err := n.SetNX(t.Context(), "warm-up", "v", time.Second)
		require.NoError(t, err)
	}
	require.Equal(t, 1, pool.Stats().IdleCount)

	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() })
	start := time.Now()
	fresh := open(t, srv.URL())
	require.Less(t, time.Since(start), 100*time.Millisecond, "Open must not block on a paused server")

	for name, n := range map[string]driver.Node{"warm": warm, "fresh": fresh, "New": wrapped} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		start := time.Now()
		_, err := n.SetNX(ctx, "paused-"+name, "v", time.Minute)
		elapsed := time.Since(start)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.NotContains(t, err.Error(), password)
		require.Less(t, elapsed, 600*time.Millisecond, name)

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = n.EvalRelease(ctx, "paused-"+name, "v")
		require.ErrorIs(t, err, context.Canceled, name)
	}
	// The interrupted connections were closed, not pooled.
	require.Equal(t, 0, pool.Stats().ActiveCount)

	require.NoError(t, srv.Resume())
	for name, n := range map[string]driver.Node{"warm": warm, "fresh": fresh, "New": wrapped} {
		for i := range 3 {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			k := "resumed-" + name + string(rune('0'+i))
			ok, err := n.SetNX(ctx, k, "v", time.Minute)
			require.NoError(t, err, name)
			require.True(t, ok, name)
			ok, err = n.EvalRelease(ctx, k, "v")
			cancel()
			require.NoError(t, err, name)
			require.True(t, ok, name)
		}
	}
}

func TestNewCloseKeepsPool(t *testing.T) {
	srv := redistest.NewServer(t)
	pool := newPool(t, srv.Addr())
	n := redigo.New(pool)
	ctx := t.Context()
	_, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)

	require.NoError(t, n.Close())
	require.NoError(t, n.Close())
	for _, err := range calls(ctx, n, "k") {
		require.ErrorIs(t, err, redigo.ErrClosed)
	}
	c, err := pool.GetContext(ctx)
	require.NoError(t, err)
	defer c.Close()
	_, err = redis.DoContext(c, ctx, "PING")
	require.NoError(t, err, "the caller's pool must stay open")
}

func TestString(t *testing.T) {
	name := func(n driver.Node) string { return n.(interface{ String() string }).String() }
	n, err := redigo.Driver{}.Open("redis://alice:s3cret@127.0.0.1:7000/3")
	require.NoError(t, err)
	defer n.Close()
	require.Equal(t, "redis://alice:xxxxx@127.0.0.1:7000/3", name(n))

	p1, p2 := &redis.Pool{}, &redis.Pool{}
	a, b, a2 := redigo.New(p1), redigo.New(p2), redigo.New(p1)
	require.True(t, strings.HasPrefix(name(a), "redigo"))
	require.NotEqual(t, name(a), name(b), "nodes over different pools")
	require.Equal(t, name(a), name(a2), "nodes over the same pool")
	_, err = redlock.New([]driver.Node{a, b, a2})
	require.Error(t, err, "redlock.New must refuse two nodes over one pool")
}

func TestRegistered(t *testing.T) {
	require.True(t, slices.Contains(redlock.Drivers(), "redigo"), "Drivers() = %v", redlock.Drivers())

	c, err := redlock.Open("redigo", redistest.Addrs(redistest.NewServers(t, 3)))
	require.NoError(t, err)
	defer c.Close()
	ctx := t.Context()
	l, err := c.TryLock(ctx, "registered")
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "registered")
	require.True(t, errors.Is(err, redlock.ErrNotObtained), "second TryLock: %v", err)
	require.NoError(t, l.Unlock(ctx))
}
