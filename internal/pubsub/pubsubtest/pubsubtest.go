// Package pubsubtest checks, against real redis-server processes, how a Redis
// driver's nodes share their pub/sub connection (package pubsub): every Redis
// driver runs [Run] for its nodes from Open and from New. What any
// driver.Notifier must do is checked by package conformance; this is what the
// Redis drivers promise on top of it.
package pubsubtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// stallBound is how long a call on a stalled server may take beyond its
// context.
const stallBound = 2 * time.Second

// Run runs the subtests on nodes that open returns for a server's address.
// open must close the node, and anything else it made, when the test ends;
// the nodes must implement driver.Notifier.
func Run(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T, addr string) driver.Node)
	}{
		{"SharedConnection", sharedConnection},
		{"RefcountedUnsubscribe", refcountedUnsubscribe},
		{"PausedServer", pausedServer},
		{"CloseLeaksNothing", closeLeaksNothing},
		{"CloseWhileDialing", closeWhileDialing},
		{"RecoversAfterKill", recoversAfterKill},
		{"ReconnectsItself", reconnectsItself},
		{"ClusterEnabledServer", clusterEnabledServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			tc.fn(t, open)
		})
	}
}

// RunOpen runs Run on nodes that d opens.
func RunOpen(t *testing.T, d driver.Driver) {
	t.Helper()
	open := func(t *testing.T, addr string) driver.Node {
		t.Helper()
		n, err := d.Open(addr)
		if err != nil {
			t.Fatalf("Open(%q) = %v", addr, err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	Run(t, open)
}

// notifier opens a node on srv.
func notifier(t *testing.T, open func(t *testing.T, addr string) driver.Node, srv *redistest.Server) driver.Notifier {
	t.Helper()
	n := open(t, srv.Addr())
	nn, ok := n.(driver.Notifier)
	if !ok {
		t.Fatalf("%T does not implement driver.Notifier", n)
	}
	return nn
}

// testContext returns a context that ends after d or with the test.
func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// subscribe subscribes to key and fails the test on an error; the
// subscription is canceled when the test ends unless the returned cancel was
// called.
func subscribe(t *testing.T, n driver.Notifier, key string) (<-chan struct{}, func()) {
	t.Helper()
	notify := make(chan struct{}, 1)
	cancel, err := n.Subscribe(testContext(t, 5*time.Second), key, notify)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", key, err)
	}
	var once sync.Once
	stop := func() { once.Do(cancel) }
	t.Cleanup(stop)
	return notify, stop
}

// publish publishes a release of key on srv, as ReleaseNotify does.
func publish(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	if _, err := srv.Do(testContext(t, 5*time.Second), "SPUBLISH", driver.ReleaseChannel(key), ""); err != nil {
		t.Fatal(err)
	}
}

// notified fails the test unless notify receives within 5s.
func notified(t *testing.T, notify <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no notification 5s after the release was published", what)
	}
}

// subscribers returns the number of connections to srv that are subscribed
// to a channel.
func subscribers(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	return len(subscriberIDs(t, srv))
}

// subscriberIDs returns the client IDs of the connections to srv that are
// subscribed to a channel: the P flag (pub/sub) in CLIENT LIST, whose sub=
// counts only unsharded channels (and ssub=, from Redis 7.0.3, the sharded
// ones).
func subscriberIDs(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	v, err := srv.Do(testContext(t, 5*time.Second), "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.Lines(v.(string)) {
		var id string
		for field := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(field, "id="); ok {
				id = v
			}
			if flags, ok := strings.CutPrefix(field, "flags="); ok && strings.Contains(flags, "P") {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// killSubscribers closes srv's subscribed connections (CLIENT KILL) and
// waits until they are gone; it returns their client IDs. The node may have
// made a new one meanwhile.
func killSubscribers(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	killed := subscriberIDs(t, srv)
	if _, err := srv.Do(testContext(t, 5*time.Second), "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		return !slices.ContainsFunc(subscriberIDs(t, srv), func(id string) bool { return slices.Contains(killed, id) })
	}, "CLIENT KILL TYPE pubsub left a subscribed connection")
	return killed
}

// numsub returns the number of connections to srv subscribed to the release
// channel of key (PUBSUB SHARDNUMSUB).
func numsub(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	v, err := srv.Do(testContext(t, 5*time.Second), "PUBSUB", "SHARDNUMSUB", driver.ReleaseChannel(key))
	if err != nil {
		t.Fatal(err)
	}
	reply, ok := v.([]any)
	if !ok || len(reply) != 2 {
		t.Fatalf("PUBSUB SHARDNUMSUB: unexpected reply %#v", v)
	}
	return reply[1].(int64)
}

// eventually fails the test unless cond holds within 5s.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Many subscribers, on many keys and on the same keys, share one pub/sub
// connection, and each is notified.
func sharedConnection(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	n := notifier(t, open, srv)
	const waiters, keys = 100, 10
	notifies := make([]chan struct{}, waiters)
	errs := make([]error, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		notifies[i] = make(chan struct{}, 1)
		wg.Go(func() {
			var cancel func()
			cancel, errs[i] = n.Subscribe(testContext(t, 5*time.Second), "k"+strconv.Itoa(i%keys), notifies[i])
			if cancel != nil {
				t.Cleanup(cancel)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%d concurrent Subscribe calls: %v", waiters, err)
	}
	if got := subscribers(t, srv); got != 1 {
		t.Fatalf("%d subscribers on %d keys: %d subscribed connections in CLIENT LIST, want 1: a node shares one pub/sub connection", waiters, keys, got)
	}
	for k := range keys {
		if got := numsub(t, srv, "k"+strconv.Itoa(k)); got != 1 {
			t.Fatalf("PUBSUB SHARDNUMSUB of a key with %d subscribers = %d, want 1", waiters/keys, got)
		}
		publish(t, srv, "k"+strconv.Itoa(k))
	}
	for i, notify := range notifies {
		notified(t, notify, fmt.Sprintf("subscriber %d of key k%d", i, i%keys))
	}
}

// The channel is unsubscribed when its last subscriber leaves, not before,
// and can be subscribed again.
func refcountedUnsubscribe(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	n := notifier(t, open, srv)
	_, stopA := subscribe(t, n, "k")
	notifyB, stopB := subscribe(t, n, "k")
	if got := numsub(t, srv, "k"); got != 1 {
		t.Fatalf("PUBSUB SHARDNUMSUB with two subscribers = %d, want 1", got)
	}
	stopA()
	// Another subscription goes through the same connection, after any
	// SUNSUBSCRIBE that stopA might have sent.
	subscribe(t, n, "other")
	if got := numsub(t, srv, "k"); got != 1 {
		t.Fatalf("PUBSUB SHARDNUMSUB after one of two subscribers left = %d, want 1: unsubscribe only when the last leaves", got)
	}
	publish(t, srv, "k")
	notified(t, notifyB, "the remaining subscriber")

	stopB()
	eventually(t, func() bool { return numsub(t, srv, "k") == 0 },
		"PUBSUB SHARDNUMSUB 5s after the last subscriber left: still subscribed")
	select {
	case <-notifyB:
		t.Fatal("notified after cancel returned")
	default:
	}

	notifyC, _ := subscribe(t, n, "k")
	if got := numsub(t, srv, "k"); got != 1 {
		t.Fatalf("PUBSUB SHARDNUMSUB after subscribing again = %d, want 1", got)
	}
	publish(t, srv, "k")
	notified(t, notifyC, "a subscriber that came after the channel was unsubscribed")
}

// Subscribe on a stalled server returns when its context ends, both before
// the node has a pub/sub connection (cold) and with one (warm), and works
// again once the server resumes.
func pausedServer(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	cold, warm := notifier(t, open, srv), notifier(t, open, srv)
	subscribe(t, warm, "warm-up")
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })

	for name, n := range map[string]driver.Notifier{"cold": cold, "warm": warm} {
		const after = 200 * time.Millisecond
		ctx, cancel := context.WithTimeout(t.Context(), after)
		start := time.Now()
		_, err := n.Subscribe(ctx, "k", make(chan struct{}, 1))
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Subscribe on a stalled server (%s) with a %v deadline: error = %v, want one matching context.DeadlineExceeded", name, after, err)
		}
		if took > after+stallBound {
			t.Errorf("Subscribe on a stalled server (%s) with a %v deadline took %v", name, after, took)
		}

		ctx, cancel = context.WithCancel(t.Context())
		timer := time.AfterFunc(after, cancel)
		start = time.Now()
		_, err = n.Subscribe(ctx, "k", make(chan struct{}, 1))
		took = time.Since(start)
		timer.Stop()
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Subscribe on a stalled server (%s), canceled after %v: error = %v, want one matching context.Canceled", name, after, err)
		}
		if took > after+stallBound {
			t.Errorf("Subscribe on a stalled server (%s), canceled after %v, took %v", name, after, took)
		}
	}

	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]driver.Notifier{"cold": cold, "warm": warm} {
		var notify <-chan struct{}
		eventually(t, func() bool {
			ch := make(chan struct{}, 1)
			cancel, err := n.Subscribe(testContext(t, time.Second), "resumed-"+name, ch)
			if err != nil {
				return false
			}
			t.Cleanup(cancel)
			notify = ch
			return true
		}, "Subscribe (%s) after the server resumed: still failing after 5s", name)
		publish(t, srv, "resumed-"+name)
		notified(t, notify, name+" after the server resumed")
	}
}

// Close ends the pub/sub connection and its goroutines, and fails the
// Subscribe calls still waiting and all later ones.
func closeLeaksNothing(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	ignore := goleak.IgnoreCurrent()
	// Cleanups run last-in first-out: this one after those of open.
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })

	n := open(t, srv.Addr())
	nn := n.(driver.Notifier)
	subscribe(t, nn, "a")
	_, stop := subscribe(t, nn, "b")
	stop()

	// A Subscribe waits on a stalled server when the node is closed.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	closeWhileSubscribing(t, n, "c", "on a stalled server")
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.Subscribe(testContext(t, time.Second), "d", make(chan struct{}, 1)); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Subscribe after Close: error = %v, want one matching driver.ErrClosed", err)
	}
	eventually(t, func() bool { return subscribers(t, srv) == 0 },
		"5s after Close, a connection is still subscribed")
}

// Close ends a dial of the pub/sub connection that stalls in its handshake,
// also the dial of a client the caller made (a node from New), which may not
// watch its context: Close does not wait for it (the rueidis family's
// Dedicate, bounded only by the client's dial timeout, made Close take 4.8s).
func closeWhileDialing(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	// Before the pause: a client the caller made may connect at once.
	n := open(t, srv.Addr())
	nn := n.(driver.Notifier)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Resume() })

	_, err := nn.Subscribe(testContext(t, 200*time.Millisecond), "a", make(chan struct{}, 1))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe on a stalled server: error = %v, want one matching context.DeadlineExceeded", err)
	}
	closeWhileSubscribing(t, n, "b", "while the pub/sub connection was being made to a stalled server")
}

// closeWhileSubscribing subscribes to channel on n, a driver.Notifier whose
// server is stalled, and closes n while the Subscribe waits: Close must
// return within stallBound, and the Subscribe with an error matching
// driver.ErrClosed. stalled says what Close met, for the messages.
func closeWhileSubscribing(t *testing.T, n driver.Node, channel, stalled string) {
	t.Helper()
	waiting := make(chan error, 1)
	go func() {
		_, err := n.(driver.Notifier).Subscribe(testContext(t, 10*time.Second), channel, make(chan struct{}, 1))
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > stallBound {
		t.Errorf("Close %s took %v", stalled, took)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Subscribe waiting when the node was closed: error = %v, want one matching driver.ErrClosed", err)
		}
	case <-time.After(stallBound):
		t.Fatal("Subscribe waiting when the node was closed: still waiting")
	}
}

// When the server closes the pub/sub connection, a later Subscribe makes a
// new one, which also subscribes the subscriptions made before.
func recoversAfterKill(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	n := notifier(t, open, srv)
	before, _ := subscribe(t, n, "before")
	killSubscribers(t, srv)

	// A Subscribe may still see the dying connection; one soon succeeds and
	// is notified.
	eventually(t, func() bool {
		key := "after-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		ch := make(chan struct{}, 1)
		cancel, err := n.Subscribe(testContext(t, time.Second), key, ch)
		if err != nil {
			return false
		}
		defer cancel()
		publish(t, srv, key)
		select {
		case <-ch:
			return true
		case <-time.After(time.Second):
			return false
		}
	}, "Subscribe after the pub/sub connection was killed: no working subscription after 5s")
	if got := subscribers(t, srv); got != 1 {
		t.Fatalf("after the reconnect: %d subscribed connections, want 1", got)
	}
	publish(t, srv, "before")
	notified(t, before, "a subscription made before the connection was killed, after the reconnect")
}

// When the server closes the pub/sub connection, the node makes a new one
// itself, with no Subscribe to prompt it, and subscribes again the
// subscriptions made before, which hear releases again within seconds.
func reconnectsItself(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewServer(t)
	n := notifier(t, open, srv)
	before, _ := subscribe(t, n, "before")
	killed := killSubscribers(t, srv)
	eventually(t, func() bool {
		ids := subscriberIDs(t, srv)
		return len(ids) == 1 && !slices.Contains(killed, ids[0]) && numsub(t, srv, "before") == 1
	}, "no new connection subscribed to the channel 5s after the pub/sub connection was killed, and no Subscribe since (killed %v)", killed)
	publish(t, srv, "before")
	notified(t, before, "a subscription made before the connection was killed, with no Subscribe since")
}

// A cluster-enabled server given as one server (a Redis Cluster of one
// shard, which serves every slot) refuses a SSUBSCRIBE of channels in
// several hash slots (CROSSSLOT): subscriptions to keys of different slots
// made together still succeed, at the latest once the node has met that
// refusal, and are notified.
func clusterEnabledServer(t *testing.T, open func(t *testing.T, addr string) driver.Node) {
	srv := redistest.NewCluster(t, 1).Servers()[0]
	n := notifier(t, open, srv)
	const rounds, keys = 3, 20
	var last error
	for r := range rounds {
		notifies := make([]chan struct{}, keys)
		errs := make([]error, keys)
		var wg sync.WaitGroup
		for i := range keys {
			notifies[i] = make(chan struct{}, 1)
			wg.Go(func() {
				var cancel func()
				cancel, errs[i] = n.Subscribe(testContext(t, 5*time.Second), fmt.Sprintf("r%d-k%d", r, i), notifies[i])
				if cancel != nil {
					t.Cleanup(cancel)
				}
			})
		}
		wg.Wait()
		if last = errors.Join(errs...); last != nil {
			continue
		}
		for i, notify := range notifies {
			key := fmt.Sprintf("r%d-k%d", r, i)
			publish(t, srv, key)
			notified(t, notify, key)
		}
		return
	}
	t.Fatalf("%d rounds of %d concurrent Subscribe calls to keys of different slots on a cluster-enabled server: each round failed; the last: %v", rounds, keys, last)
}
