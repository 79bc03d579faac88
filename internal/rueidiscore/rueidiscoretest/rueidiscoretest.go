// Package rueidiscoretest checks, against real redis-server processes, a
// driver built on package rueidiscore (rueidis, valkeygo): the conformance
// suites, the shared pub/sub connection, and how its nodes make, lose and
// replace their client without any call waiting beyond its context. Each such
// driver's tests call [Run].
package rueidiscoretest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub/pubsubtest"
	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// target is the driver under test, as the subtests see it.
type target struct {
	// Name is the name the driver registers.
	Name string
	// Driver is the driver's Driver.
	Driver driver.Driver
	// Client makes a client on addr as a caller might configure it, closed
	// when the test ends, and returns a function that makes a node over it
	// with the driver's New; its nodes are closed by the test.
	Client func(t *testing.T, addr string) (newNode func() driver.Node)
	// NewNil returns the driver's New(nil).
	NewNil func() driver.Node
}

// Run runs the subtests on the nodes of the driver registered as name: d's,
// and those that newNode (the driver's New) makes over clients that newClient
// makes for a server's address as a caller might configure them.
func Run[C interface {
	comparable
	Close()
}](t *testing.T, name string, d driver.Driver, newNode func(C) driver.Node, newClient func(addr string) (C, error)) {
	t.Helper()
	tg := target{
		Name:   name,
		Driver: d,
		Client: func(t *testing.T, addr string) func() driver.Node {
			c, err := newClient(addr)
			require.NoError(t, err)
			t.Cleanup(c.Close)
			return func() driver.Node { return newNode(c) }
		},
		NewNil: func() driver.Node {
			var none C
			return newNode(none)
		},
	}
	// The conformance suites, which only wait on servers of their own, run
	// in parallel with each other once the others have run alone: those
	// bound a call's time on a stalled or dropped connection, or look for
	// goroutines left in the whole process (goleak: the pub/sub suites,
	// CloseDuringCreation and the like).
	parallel := map[string]bool{"RedisConformance": true, "ConformanceNew": true}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, target)
	}{
		{"RedisConformance", func(t *testing.T, tg target) { conformance.RunRedis(t, tg.Driver, conformance.WithCluster()) }},
		{"ConformanceNew", conformanceNew},
		{"PubSubOpen", func(t *testing.T, tg target) { pubsubtest.RunOpen(t, tg.Driver) }},
		{"PubSubNew", func(t *testing.T, tg target) { pubsubtest.Run(t, tg.newNode) }},
		{"Registered", registered},
		{"NewCloseKeepsClient", newCloseKeepsClient},
		{"NewNil", newNil},
		{"String", stringer},
		{"OpenUnreachable", openUnreachable},
		{"OpenClusterNotEnabled", openClusterNotEnabled},
		{"OpenPausedServer", openPausedServer},
		{"PausedAfterConnect", pausedAfterConnect},
		{"CloseDuringCreation", closeDuringCreation},
		{"CloseDuringCreationSucceeding", closeDuringCreationSucceeding},
		{"ConcurrentFirstUse", concurrentFirstUse},
		{"Reconnect", reconnect},
		{"ReconnectToStalledServer", reconnectToStalledServer},
		{"Reconnect/RepeatWithinNetworkTimeout", repeatWithinNetworkTimeout},
		{"ReconnectBehindLongCall/Open", func(t *testing.T, tg target) { reconnectBehindLongCall(t, tg.open) }},
		{"ReconnectBehindLongCall/New", func(t *testing.T, tg target) { reconnectBehindLongCall(t, tg.newNode) }},
		{"Lane/LoneCalls", laneLoneCalls},
		{"Lane/NeverQueues", laneNeverQueues},
		{"Lane/Canceled", laneCanceled},
		{"Lane/ClosedIdle", laneClosedIdle},
		{"Queue/TimeoutStartsAtSend", queueTimeoutStartsAtSend},
		{"Queue/NewCloseSendsNoQueuedCall", newCloseQueued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			if parallel[tc.name] {
				t.Parallel()
			}
			tc.fn(t, tg)
		})
	}
}

// newNode returns a node from New over a new client on addr, closed when the
// test ends.
func (tg target) newNode(t *testing.T, addr string) driver.Node {
	t.Helper()
	n := tg.Client(t, addr)()
	t.Cleanup(func() { n.Close() })
	return n
}

// open opens a node on addr and closes it when the test ends.
func (tg target) open(t *testing.T, addr string) driver.Node {
	t.Helper()
	n, err := tg.Driver.Open(addr)
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

func conformanceNew(t *testing.T, tg target) {
	conformance.Run(t, func(t *testing.T) driver.Node { return tg.newNode(t, redistest.NewServer(t).Addr()) })
}

// newCloseQueued is conformance.QueuedAtClose for a node from New, whose
// client, the caller's, stays open after the node's Close.
func newCloseQueued(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	conformance.QueuedAtClose(t, srv, tg.newNode(t, srv.Addr()))
}

// testContext returns a context that ends after d or with the test.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func registered(t *testing.T, tg target) {
	require.Contains(t, redlock.Drivers(), tg.Name)
}

func newCloseKeepsClient(t *testing.T, tg target) {
	ctx := testContext(t, 10*time.Second)
	newNode := tg.Client(t, redistest.NewServer(t).Addr())
	n := newNode()
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, n.Close())
	require.NoError(t, n.Close(), "Close is idempotent")
	for call, err := range conformance.Calls(ctx, n, "k") {
		require.ErrorIs(t, err, driver.ErrClosed, call)
	}
	again := newNode()
	defer again.Close()
	ok, err = again.EvalRelease(ctx, "k", "v")
	require.NoError(t, err, "Close on a node from New must not close the caller's client")
	require.True(t, ok, "the key set through the closed node")
}

func newNil(t *testing.T, tg target) {
	want := tg.Name + ": New was given a nil client"
	n := tg.NewNil()
	for call, err := range conformance.Calls(t.Context(), n, "k") {
		require.EqualError(t, err, want, call)
	}
	require.EqualError(t, n.Close(), want, "Close")
}

func stringer(t *testing.T, tg target) {
	for addr, want := range map[string]string{
		"127.0.0.1:6380":                       "127.0.0.1:6380",
		"redis://:s3cret@redis.example:6379/7": "redis://:xxxxx@redis.example:6379/7",
	} {
		require.Equal(t, want, tg.open(t, addr).(fmt.Stringer).String(), "Open(%q).String()", addr)
	}
	srv := redistest.NewServer(t)
	n := tg.newNode(t, srv.Addr())
	require.Equal(t, srv.Addr(), n.(fmt.Stringer).String(), "a node from New is named by its client's address")
}

func openUnreachable(t *testing.T, tg target) {
	addr := redistest.ClosedAddrs(t, 1)[0]
	start := time.Now()
	n := tg.open(t, "redis://:s3cret@"+addr)
	require.Less(t, time.Since(start), 100*time.Millisecond, "Open must not connect")

	for call, err := range conformance.Calls(testContext(t, time.Second), n, "k") {
		require.Error(t, err, call)
		require.NotContains(t, err.Error(), "s3cret", call)
	}
	require.Less(t, time.Since(start), 1500*time.Millisecond)

	// A server appears on the address: the next call connects.
	srv := redistest.NewServer(t, redistest.WithPassword("s3cret"))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	testproxy.Serve(t, l, srv.Addr())
	ctx := testContext(t, 10*time.Second)
	ok, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
}

// A cluster address of a server that is not cluster-enabled: the library
// falls back to a client of that one server, but the node's calls fail,
// naming the address, instead of writing to it as to a cluster.
func openClusterNotEnabled(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	addr := "redis://" + srv.Addr() + "?cluster=true"
	n := tg.open(t, addr)
	ctx := testContext(t, 10*time.Second)
	for _, call := range []struct {
		name string
		err  func() error
	}{
		{"SetNX", func() error { _, err := n.SetNX(ctx, "k", "v", time.Minute); return err }},
		{"Identity", func() error { _, err := n.(driver.Identifier).Identity(ctx); return err }},
		{"Subscribe", func() error {
			cancel, err := n.(driver.Notifier).Subscribe(ctx, "k", make(chan struct{}, 1))
			if err == nil {
				cancel()
			}
			return err
		}},
	} {
		err := call.err()
		require.Error(t, err, call.name)
		require.ErrorContains(t, err, addr, call.name)
		require.ErrorContains(t, err, "not cluster-enabled", call.name)
	}
	got, err := srv.Do(ctx, "EXISTS", "k")
	require.NoError(t, err)
	require.Equal(t, int64(0), got, "SetNX wrote to a server that is not cluster-enabled")
}

// A call waiting for the connection to a stalled server ends when its context
// is canceled, even one with a distant deadline, and the client is created
// once the server resumes.
func openPausedServer(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	require.NoError(t, srv.Pause())
	n := tg.open(t, srv.Addr())

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := n.SetNX(ctx, "k", "v", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 600*time.Millisecond)

	require.NoError(t, srv.Resume())
	ok, err := n.SetNX(testContext(t, 10*time.Second), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
}

// A lone call whose context has a distant deadline, which goes through the
// node's pipelining client (not its lane: see rueidiscore's lane), ends when
// the context is canceled rather than block until the deadline; the node
// works again once the server resumes.
func pausedAfterConnect(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	n := tg.open(t, srv.Addr())
	ok, err := n.SetNX(testContext(t, 10*time.Second), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, srv.Pause())

	for name, call := range map[string]func(context.Context) error{
		"SetNX":       func(ctx context.Context) error { _, err := n.SetNX(ctx, "k", "v", time.Minute); return err },
		"EvalRelease": func(ctx context.Context) error { _, err := n.EvalRelease(ctx, "k", "v"); return err },
		"Extend":      func(ctx context.Context) error { _, err := n.Extend(ctx, "k", "v", time.Minute); return err },
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		require.ErrorIs(t, call(ctx), context.Canceled, name)
		require.Less(t, time.Since(start), 1500*time.Millisecond, name)
	}

	require.NoError(t, srv.Resume())
	ctx := testContext(t, 10*time.Second)
	ok, err = n.Extend(ctx, "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = n.EvalRelease(ctx, "k", "v")
	require.NoError(t, err)
	require.True(t, ok)
}

// clients returns the number of clients connected to srv, not counting the
// connection that asks.
func clients(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	v, err := srv.Do(testContext(t, 5*time.Second), "CLIENT", "LIST")
	require.NoError(t, err)
	return strings.Count(strings.TrimSpace(v.(string)), "\n")
}

func closeDuringCreation(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	require.NoError(t, srv.Pause())
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	n, err := tg.Driver.Open(srv.Addr())
	require.NoError(t, err)
	// The first call starts creating the client, which stalls in its handshake.
	_, err = n.SetNX(testContext(t, 100*time.Millisecond), "k", "v", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A call without a deadline waits for the creation until Close ends it.
	waiter := make(chan error, 1)
	go func() {
		_, err := n.SetNX(context.Background(), "k", "v", time.Minute)
		waiter <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, n.Close())
	select {
	case err := <-waiter:
		require.ErrorIs(t, err, driver.ErrClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("a call waiting for the connection did not return after Close")
	}
	for call, err := range conformance.Calls(t.Context(), n, "k") {
		require.ErrorIs(t, err, driver.ErrClosed, call)
	}

	// Once the server answers again, no connection of the closed node is left.
	require.NoError(t, srv.Resume())
	require.Eventually(t, func() bool { return clients(t, srv) == 0 }, 5*time.Second, 20*time.Millisecond)
	v, err := srv.Do(testContext(t, 5*time.Second), "EXISTS", "k")
	require.NoError(t, err)
	require.Equal(t, int64(0), v, "no command may be applied after Close")
}

func closeDuringCreationSucceeding(t *testing.T, tg target) {
	// Close while the handshake is under way on a live server, many times, to
	// exercise the race between creation and Close.
	srv := redistest.NewServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for range 50 {
		n, err := tg.Driver.Open(srv.Addr())
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			n.SetNX(context.Background(), "k", "v", time.Millisecond)
		}()
		n.Close()
		<-done
		for call, err := range conformance.Calls(t.Context(), n, "k") {
			require.ErrorIs(t, err, driver.ErrClosed, call)
		}
	}
	require.Eventually(t, func() bool { return clients(t, srv) == 0 }, 5*time.Second, 20*time.Millisecond)
}

func concurrentFirstUse(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	n := tg.open(t, srv.Addr())
	ctx := testContext(t, 10*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for i := range errs {
		wg.Go(func() { _, errs[i] = n.SetNX(ctx, fmt.Sprint("k", i), "v", time.Minute) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

func reconnect(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr())
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer p.Close()
	n, err := tg.Driver.Open(p.Addr())
	require.NoError(t, err)
	defer n.Close()

	ctx := testContext(t, 10*time.Second)
	for i := range 5 {
		ok, err := n.SetNX(ctx, "k", "v", time.Minute)
		require.NoError(t, err)
		require.Equal(t, i == 0, ok)
		// The server may not have seen the dropped connection's end yet.
		require.Eventually(t, func() bool { return clients(t, srv) == 1 }, 5*time.Second, 20*time.Millisecond, "one connection")

		p.Drop()
		// A call that sees the connection fail reports it (or, if rueidis
		// noticed first, connects again); the next one works.
		n.Extend(ctx, "k", "v", time.Minute)
		ok, err = n.Extend(ctx, "k", "v", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Eventually(t, func() bool { return clients(t, srv) == 1 }, 5*time.Second, 20*time.Millisecond,
		"replaced clients must be closed")
	require.NoError(t, n.Close())
	require.Eventually(t, func() bool { return clients(t, srv) == 0 }, 5*time.Second, 20*time.Millisecond)
}

func reconnectToStalledServer(t *testing.T, tg target) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr())
	n := tg.open(t, p.Addr())
	ok, err := n.SetNX(testContext(t, 10*time.Second), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, srv.Pause())
	p.Drop()
	// Whether a call sees the failure or a reconnect stalled in its
	// handshake, it returns by its deadline; all calls at once, too.
	shortCallsReturn(t, n, 8)
	// And a canceled call returns at once, whatever its deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = n.Extend(ctx, "k", "v", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 600*time.Millisecond)

	require.NoError(t, srv.Resume())
	require.Eventually(t, func() bool {
		ok, err := n.Extend(testContext(t, time.Second), "k", "v", time.Minute)
		return err == nil && ok
	}, 10*time.Second, 10*time.Millisecond)
}

// reconnectingCall starts an Extend of key on n with a context of 10s, whose
// connection broke and whose server does not answer, such that it makes the
// connection again and waits in the handshake: a call with a long context
// either finds the connection broken and returns, or does that; the first
// one that has not returned after 100ms does. The channel returned gets its
// error.
func reconnectingCall(t *testing.T, n driver.Node, key string) <-chan error {
	t.Helper()
	long := make(chan error, 1)
	for {
		go func() {
			_, err := n.Extend(testContext(t, 10*time.Second), key, "v", time.Minute)
			long <- err
		}()
		select {
		case err := <-long:
			require.Error(t, err)
		case <-time.After(100 * time.Millisecond):
			return long
		}
	}
}

// shortCallsReturn makes calls Extends of key k at once on n, whose server
// does not answer, each with 200ms, three times, and wants them all to fail
// within 700ms.
func shortCallsReturn(t *testing.T, n driver.Node, calls int) {
	t.Helper()
	for range 3 {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, calls)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = n.Extend(testContext(t, 200*time.Millisecond), "k", "v", time.Minute)
			})
		}
		wg.Wait()
		require.Less(t, time.Since(start), 700*time.Millisecond, "%d calls of 200ms at once", calls)
		for _, err := range errs {
			require.Error(t, err)
		}
	}
}

// reconnectBehindLongCall: a call with a long context reconnects the node's
// client to a server that accepts connections but does not answer (its
// handshake waits), and calls with short contexts come behind it. The
// library makes one connection at a time and has the others wait for it,
// whatever their contexts (up to its dial timeout, 5s); each call must still
// return by its own deadline. newNode makes the node on an address.
func reconnectBehindLongCall(t *testing.T, newNode func(*testing.T, string) driver.Node) {
	srv := redistest.NewServer(t)
	p := testproxy.New(t, srv.Addr())
	n := newNode(t, p.Addr())
	ok, err := n.SetNX(testContext(t, 10*time.Second), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, srv.Pause())
	p.Drop()
	long := reconnectingCall(t, n, "k")
	shortCallsReturn(t, n, 4)
	require.NoError(t, srv.Resume())
	<-long // whatever it says: it may have reconnected in time, or not
	require.Eventually(t, func() bool {
		ok, err := n.Extend(testContext(t, time.Second), "k", "v", time.Minute)
		return err == nil && ok
	}, 10*time.Second, 10*time.Millisecond)
}

// RunCluster runs conformance.Run on nodes that newNode (the driver's New)
// makes over cluster clients that newClusterClient makes for a Redis
// Cluster's seeds, as a caller might configure them: three clusters of two
// shards, so that Redlock/ThreeNodes has three independent nodes.
func RunCluster[C interface {
	comparable
	Close()
}](t *testing.T, newNode func(C) driver.Node, newClusterClient func(seeds []string) (C, error)) {
	t.Helper()
	// on makes a node over a new client of cl's, both closed when t ends.
	on := func(t *testing.T, cl *redistest.Cluster) driver.Node {
		c, err := newClusterClient(cl.Seeds())
		require.NoError(t, err)
		t.Cleanup(c.Close)
		n := newNode(c)
		t.Cleanup(func() { n.Close() })
		return n
	}
	clusters := redistest.NewClusters(t, 3, 2)
	next := 0
	conformance.Run(t, func(t *testing.T) driver.Node {
		cl := clusters[next%len(clusters)]
		next++
		return on(t, cl)
	})
	t.Run("String", func(t *testing.T) { clusterString(t, clusters, on) })
	cl := redistest.NewCluster(t, 1)
	newOne := func(t *testing.T) driver.Node { return on(t, cl) }
	t.Run("CallsBehindRedial", func(t *testing.T) { clusterCallsBehindRedial(t, cl, newOne) })
	t.Run("CallsBehindSlotRead", func(t *testing.T) { clusterCallsBehindSlotRead(t, cl, newOne) })
}

// clusterString: a node over a cluster client is named by the cluster's
// servers, sorted, not by a number counted up per process: two clients of
// one cluster give one name, which redlock.New refuses as a node given
// twice, and nodes of distinct clusters have distinct names.
func clusterString(t *testing.T, clusters []*redistest.Cluster, on func(*testing.T, *redistest.Cluster) driver.Node) {
	names := make([]string, len(clusters))
	nodes := make([]driver.Node, len(clusters))
	for i, cl := range clusters {
		nodes[i] = on(t, cl)
		seeds := slices.Clone(cl.Seeds()) // the primaries: the clusters have no replicas
		slices.Sort(seeds)
		names[i] = "cluster(" + strings.Join(seeds, ",") + ")"
		require.Equal(t, names[i], fmt.Sprint(nodes[i]), "a node over a client of cluster %d", i)
		require.Equal(t, names[i], fmt.Sprint(on(t, cl)), "a node over another client of cluster %d", i)
	}
	c, err := redlock.New(nodes)
	require.NoError(t, err, "nodes over distinct clusters")
	t.Cleanup(func() { c.Close() })
	_, err = redlock.New([]driver.Node{on(t, clusters[0]), on(t, clusters[0]), on(t, clusters[1])})
	require.ErrorContains(t, err, "nodes 1 and 2 are both "+names[0])
}

// clusterCalls are the calls of a cluster's node that ask the cluster
// itself (CLUSTER NODES, CLUSTER SLOTS) rather than a key's shard.
var clusterCalls = []struct {
	name string
	fn   func(context.Context, driver.Node) error
}{
	{"Identity", func(ctx context.Context, n driver.Node) error {
		_, err := n.(driver.Identifier).Identity(ctx)
		return err
	}},
	{"Subscribe", func(ctx context.Context, n driver.Node) error {
		cancel, err := n.(driver.Notifier).Subscribe(ctx, "k", make(chan struct{}, 1))
		if err == nil {
			cancel()
		}
		return err
	}},
}

// clusterCallsBehindSlotRead: Identity and Subscribe return by their
// context's end while another Subscribe, with a longer context, reads the
// slot map (CLUSTER SLOTS, to route its channel) from the cluster's one
// primary, which does not answer: they do not wait for that read.
func clusterCallsBehindSlotRead(t *testing.T, cl *redistest.Cluster, newNode func(*testing.T) driver.Node) {
	primary := cl.Servers()[0]
	for _, call := range clusterCalls {
		t.Run(call.name, func(t *testing.T) {
			n := newNode(t)
			ok, err := n.SetNX(testContext(t, 10*time.Second), "slotread-"+call.name, "v", time.Minute)
			require.NoError(t, err)
			require.True(t, ok)

			require.NoError(t, primary.Pause())
			defer primary.Resume()
			reading := make(chan error, 1)
			go func() {
				_, err := n.(driver.Notifier).Subscribe(testContext(t, 3*time.Second), "other", make(chan struct{}, 1))
				reading <- err
			}()
			time.Sleep(100 * time.Millisecond) // the read is under way
			failsWithin(t, n, call.name, call.fn, "while another call reads the slot map")
			require.NoError(t, primary.Resume())
			<-reading
		})
	}
}

// failsWithin wants fn, the call named name, on n with a context of 300ms
// to fail within a second; where says what holds it up.
func failsWithin(t *testing.T, n driver.Node, name string, fn func(context.Context, driver.Node) error, where string) {
	t.Helper()
	start := time.Now()
	err := fn(testContext(t, 300*time.Millisecond), n)
	took := time.Since(start)
	require.Error(t, err)
	require.Less(t, took, time.Second, "%s with a 300ms context %s: %v", name, where, err)
}

// clusterCallsBehindRedial: the calls of a node of New over a cluster client
// that are not its commands, Identity (CLUSTER NODES) and Subscribe (CLUSTER
// SLOTS, to route the channel), return by their context's end, as its
// commands do (see reconnectBehindLongCall), while the client makes a
// connection again to the cluster's one primary, which does not answer, for
// a call with a long context: the library has them wait for it whatever
// their contexts, up to its dial timeout (5s).
func clusterCallsBehindRedial(t *testing.T, cl *redistest.Cluster, newNode func(*testing.T) driver.Node) {
	primary := cl.Servers()[0]
	for _, call := range clusterCalls {
		t.Run(call.name, func(t *testing.T) {
			n := newNode(t)
			key := call.name
			ok, err := n.SetNX(testContext(t, 10*time.Second), key, "v", time.Minute)
			require.NoError(t, err)
			require.True(t, ok)

			// The client's connections break, and the primary stalls.
			_, err = primary.Do(testContext(t, 5*time.Second), "CLIENT", "KILL", "TYPE", "normal")
			require.NoError(t, err)
			require.NoError(t, primary.Pause())
			defer primary.Resume()
			long := reconnectingCall(t, n, key)
			failsWithin(t, n, call.name, call.fn, "behind a reconnection")
			require.NoError(t, primary.Resume())
			<-long
		})
	}
}
