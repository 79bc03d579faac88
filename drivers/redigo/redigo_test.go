package redigo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/internal/pubsub/pubsubtest"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The conformance suites, which only wait on servers of their own, run in
// parallel with one another, after the others, which run alone: those that
// bound a call's time on a stalled or dropped connection, and those that look
// for goroutines left in the whole process (goleak: the pub/sub suites,
// TestNewCloseWaitPoolSilentServer).
func TestRedisConformance(t *testing.T) {
	t.Parallel()
	conformance.RunRedis(t, redigo.Driver{})
}

func TestConformanceNew(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t *testing.T) driver.Node {
		n := redigo.New(newPool(t, redistest.NewServer(t).Addr()))
		t.Cleanup(func() { n.Close() })
		return n
	})
}

func TestPubSub(t *testing.T) {
	t.Run("Open", func(t *testing.T) { pubsubtest.RunOpen(t, redigo.Driver{}) })
	t.Run("New", func(t *testing.T) {
		pubsubtest.Run(t, func(t *testing.T, addr string) driver.Node {
			n := redigo.New(newPool(t, addr))
			t.Cleanup(func() { n.Close() })
			return n
		})
	})
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

// open opens a node for addr through the driver and closes it when the test
// ends.
func open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := redigo.Driver{}.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

func TestRegistered(t *testing.T) {
	require.Contains(t, redlock.Drivers(), "redigo")
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
	for call, err := range conformance.Calls(ctx, n, "k") {
		require.ErrorIs(t, err, driver.ErrClosed, call)
	}
	c, err := pool.GetContext(ctx)
	require.NoError(t, err)
	defer c.Close()
	_, err = redis.DoContext(c, ctx, "PING")
	require.NoError(t, err, "the caller's pool must stay open")
}

func TestNewNil(t *testing.T) {
	const want = "redigo: New was given a nil pool"
	n := redigo.New(nil)
	for call, err := range conformance.Calls(t.Context(), n, "k") {
		require.EqualError(t, err, want, call)
	}
	require.EqualError(t, n.Close(), want, "Close")
}

func TestString(t *testing.T) {
	name := func(n driver.Node) string { return n.(fmt.Stringer).String() }
	for addr, want := range map[string]string{
		"127.0.0.1:7000":                        "127.0.0.1:7000",
		"redis://alice:s3cret@127.0.0.1:7000/3": "redis://alice:xxxxx@127.0.0.1:7000/3",
	} {
		require.Equal(t, want, name(open(t, addr)), "Open(%q).String()", addr)
	}

	p1, p2 := &redis.Pool{}, &redis.Pool{}
	a, b, a2 := redigo.New(p1), redigo.New(p2), redigo.New(p1)
	require.True(t, strings.HasPrefix(name(a), "redigo"))
	require.NotEqual(t, name(a), name(b), "nodes over different pools")
	require.Equal(t, name(a), name(a2), "nodes over the same pool")
	_, err := redlock.New([]driver.Node{a, b, a2})
	require.Error(t, err, "redlock.New must refuse two nodes over one pool")
}

// NewNamed names a node over a pool by what the caller says it connects to,
// without credentials: nodes over fresh pools of one server keep one name
// (one redlock.node metric series), which redlock.New refuses twice.
func TestNewNamed(t *testing.T) {
	name := func(n driver.Node) string { return n.(fmt.Stringer).String() }
	a := redigo.NewNamed(&redis.Pool{}, "redis://alice:s3cret@10.0.0.1:6379/2")
	require.Equal(t, "redis://xxxxx@10.0.0.1:6379/2", name(a))
	again := redigo.NewNamed(&redis.Pool{}, "redis://alice:s3cret@10.0.0.1:6379/2")
	require.Equal(t, name(a), name(again), "a node over a fresh pool of the same server")
	require.Equal(t, "10.0.0.2:6379", name(redigo.NewNamed(&redis.Pool{}, "10.0.0.2:6379")))
	require.True(t, strings.HasPrefix(name(redigo.NewNamed(&redis.Pool{}, "")), "redigo("), "an empty name leaves New's")
	_, err := redlock.New([]driver.Node{a, again, redigo.NewNamed(&redis.Pool{}, "10.0.0.3:6379")})
	require.ErrorContains(t, err, "nodes 1 and 2 are both redis://xxxxx@10.0.0.1:6379/2")
	c, err := redlock.New([]driver.Node{a, redigo.NewNamed(&redis.Pool{}, "10.0.0.2:6379"), redigo.NewNamed(&redis.Pool{}, "10.0.0.3:6379")})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	nilPool := redigo.NewNamed(nil, "10.0.0.4:6379")
	require.Equal(t, "10.0.0.4:6379", name(nilPool))
	require.EqualError(t, nilPool.Close(), "redigo: New was given a nil pool")
}

// A node over the user's pool, which its Close leaves open, sends none of
// the calls still queued at Close.
func TestNewCloseSendsNoQueuedCall(t *testing.T) {
	srv := redistest.NewServer(t)
	conformance.QueuedAtClose(t, srv, redigo.New(newPool(t, srv.Addr())))
}

// A call cut short by its context closes its connection rather than pool it,
// so that the reply still on its way is never read as the answer to a later
// command: warm (pooled connection), fresh (dials and AUTHs while paused) and
// New nodes all work again, with right answers, once the server resumes.
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
	// Bounds with room for a loaded machine: a call that blocked on the
	// paused server would wait until it resumes, at the test's end.
	require.Less(t, time.Since(start), time.Second, "Open must not block on a paused server")

	for name, n := range map[string]driver.Node{"warm": warm, "fresh": fresh, "New": wrapped} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		start := time.Now()
		_, err := n.SetNX(ctx, "paused-"+name, "v", time.Minute)
		elapsed := time.Since(start)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.NotContains(t, err.Error(), password)
		require.Less(t, elapsed, 2*time.Second, name)

		ctx, cancel = context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = n.EvalRelease(ctx, "paused-"+name, "v")
		require.ErrorIs(t, err, context.Canceled, name)
	}
	// The interrupted connections were closed, not pooled. New's node gets
	// a connection on a goroutine of its own, whose DialContext may return
	// (at the cancellation) just after the call did.
	require.Eventually(t, func() bool { return pool.Stats().ActiveCount == 0 }, time.Second, time.Millisecond)

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

func TestOpenRefusesCluster(t *testing.T) {
	for _, addr := range []string{
		"redis://u:secret@127.0.0.1:7000?cluster=true&addr=127.0.0.1:7001",
		"rediss://127.0.0.1:7000?cluster=1",
	} {
		_, err := redigo.Driver{}.Open(addr)
		require.Error(t, err, addr)
		for _, want := range []string{"Redis Cluster", "goredis", "rueidis"} {
			require.Contains(t, err.Error(), want, addr)
		}
		require.NotContains(t, err.Error(), "secret")
	}
}
