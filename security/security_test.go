// Package security_test holds the cross-driver security tests,
// against real redis-server processes that the tests start: locking over TLS
// and mutual TLS, the least-privilege ACL user of the README, secrets (passwords
// and lock values) that never leak into errors, String methods, logs or
// panics, no leaked goroutines or connections under a flood of Lock calls on a
// cluster whose majority is down, and a fuzzed Open.
package security_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	goredislib "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestMain sends go-redis's log to logged, where the secrets test searches
// it, instead of the test output, which the abuse test would flood with
// failed dials.
func TestMain(m *testing.M) {
	goredislib.SetLogger(&logged)
	os.Exit(m.Run())
}

// drivers are the Redis drivers, by registered name.
var drivers = []struct {
	name string
	d    driver.Driver
}{
	{"goredis", goredis.Driver{}},
	{"redigo", redigo.Driver{}},
	{"rueidis", rueidis.Driver{}},
	{"valkeygo", valkeygo.Driver{}},
}

// openClient opens a Client through the named driver and closes it when the
// test ends.
func openClient(t *testing.T, name string, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.Open(name, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// urls returns the servers' URLs (rediss:// with the Certs files for TLS
// servers, with the password if they have one).
func urls(servers []*redistest.Server) []string {
	u := make([]string, len(servers))
	for i, s := range servers {
		u[i] = s.URL()
	}
	return u
}

// waitSubscribed waits until channel has a subscriber on every server: a
// waiter in Lock has subscribed to the key's releases.
func waitSubscribed(t *testing.T, ctx context.Context, servers []*redistest.Server, channel string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, s := range servers {
		for {
			v, err := s.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel)
			require.NoError(t, err)
			if r, ok := v.([]any); ok && len(r) == 2 && r[1] != int64(0) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no subscriber to %s on %s after 5s: the waiter did not subscribe", channel, s.Addr())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// exercise proves that every feature works through clients from newClient
// on servers: TryLock excludes, Extend, Unlock, Lock, fencing tokens that
// rise, hand-off by release notification, and Do, which extends the lock
// past its TTL. prefix is the clients' key prefix.
func exercise(t *testing.T, servers []*redistest.Server, prefix string, newClient func(opts ...redlock.Option) *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const ttl = 2 * time.Second
	holder := newClient(redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second))
	// The waiter polls once a minute: only a release notification wakes it
	// in time.
	waiter := newClient(redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(time.Second),
		redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
	key := "exercise-" + t.Name()

	l, err := holder.TryLock(ctx, key)
	require.NoError(t, err, "TryLock")
	require.Positive(t, l.Token(), "fencing token")
	_, err = waiter.TryLock(ctx, key)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "TryLock of a held lock")
	require.NoError(t, l.Extend(ctx, ttl), "Extend")
	left, err := l.TTL(ctx)
	require.NoError(t, err, "Lock.TTL")
	require.Positive(t, left, "Lock.TTL")

	got := make(chan *redlock.Lock, 1)
	errc := make(chan error, 1)
	go func() {
		w, err := waiter.Lock(ctx, key)
		if err != nil {
			errc <- err
			return
		}
		got <- w
	}()
	waitSubscribed(t, ctx, servers, driver.ReleaseChannel(prefix+key))
	released := time.Now()
	require.NoError(t, l.Unlock(ctx), "Unlock")
	var w *redlock.Lock
	select {
	case w = <-got:
	case err := <-errc:
		t.Fatalf("the waiter's Lock: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release within 10s")
	}
	require.Less(t, time.Since(released), 5*time.Second, "hand-off")
	require.Greater(t, w.Token(), l.Token(), "fencing tokens must rise with every grant")
	require.NoError(t, w.Unlock(ctx))

	l, err = holder.Lock(ctx, key)
	require.NoError(t, err, "Lock")
	require.Greater(t, l.Token(), w.Token(), "fencing tokens must rise with every grant")
	require.NoError(t, l.Unlock(ctx))

	// Do outlives the TTL only if its extensions work.
	// Its node timeout leaves room for a busy machine: an extension that
	// needs a new connection (a TLS handshake) must not miss it.
	short := newClient(redlock.WithTTL(1500*time.Millisecond), redlock.WithNodeTimeout(500*time.Millisecond))
	err = short.Do(ctx, key+"-do", func(ctx context.Context) error {
		select {
		case <-time.After(2250 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("Do canceled its function: %w", context.Cause(ctx))
		}
	})
	require.NoError(t, err, "Do over more than its TTL")
}

// recorder is a node that records the lock values sent through it, so that
// tests can look for them in errors and outputs: a Lock never shows its
// value. It passes every call to the node it wraps, which must implement
// driver.Fencer and driver.Notifier, as the Redis drivers' nodes do.
type recorder struct {
	driver.Node
	values *valueSet
}

// valueSet is a set of lock values, safe for concurrent use.
type valueSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *valueSet) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]bool)
	}
	s.m[v] = true
}

func (s *valueSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l []string
	for v := range s.m {
		l = append(l, v)
	}
	return l
}

var (
	_ driver.Fencer   = recorder{}
	_ driver.Notifier = recorder{}
)

func (r recorder) String() string { return fmt.Sprint(r.Node) }

func (r recorder) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	r.values.add(value)
	return r.Node.SetNX(ctx, key, value, ttl)
}

func (r recorder) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	r.values.add(value)
	return r.Node.(driver.Fencer).SetNXFence(ctx, key, value, ttl, fenceKey)
}

func (r recorder) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return r.Node.(driver.Fencer).RaiseFence(ctx, key, value, fenceKey, token)
}

func (r recorder) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return r.Node.(driver.Notifier).ReleaseNotify(ctx, key, value)
}

func (r recorder) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	return r.Node.(driver.Notifier).Subscribe(ctx, key, notify)
}

// errorTexts returns what err and every error in its tree print with %v,
// %+v and %#v.
func errorTexts(err error) []string {
	if err == nil {
		return nil
	}
	texts := []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		texts = append(texts, errorTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			texts = append(texts, errorTexts(e)...)
		}
	}
	var ne *redlock.NodeError
	if errors.As(err, &ne) {
		texts = append(texts, ne.Addr)
	}
	return texts
}
