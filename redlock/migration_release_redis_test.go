package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The README's caveat on releases while a slot migrates: the release of a
// key already moved to the importing shard runs there (ASK), where no waiter
// listens, since subscriptions stay on the migrating shard until the slot is
// assigned; the waiter takes the lock at its next poll. (The README said
// only that a migration costs redirections, while a waiter with a 20 s
// backoff slept 19 s through such a release.) If this test fails because
// the waiter heard the release, the caveat can go.
func TestClusterReleaseMidMigrationHeardAtPoll(t *testing.T) {
	for _, name := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := redistest.NewCluster(t, 2)
			const backoff = 10 * time.Second
			// A node timeout of 2s, not the default 200ms: a cluster node's
			// first call connects and reads the slot map, and the waiter's
			// first subscription dials a pub/sub connection; on a loaded
			// machine the holder's first TryLock failed ("connect: still
			// connecting: context deadline exceeded", rueidis and valkeygo).
			// What the test checks does not depend on it.
			open := func(opts ...redlock.Option) *redlock.Client {
				cl, err := redlock.Open(name, []string{c.URL()}, append([]redlock.Option{redlock.WithTTL(30 * time.Second),
					redlock.WithNodeTimeout(2 * time.Second)}, opts...)...)
				require.NoError(t, err)
				t.Cleanup(func() { cl.Close() })
				return cl
			}
			seen := &subscribedAttempts{}
			holder, waiter := open(), open(redlock.WithBackoff(redlock.ConstantBackoff(backoff)), redlock.WithObserver(seen))
			const key = "release-mid-migration"
			l, err := holder.TryLock(t.Context(), key)
			require.NoError(t, err)
			waited := make(chan error, 1)
			go func() {
				w, err := waiter.Lock(t.Context(), key)
				if err == nil {
					err = w.Unlock(context.WithoutCancel(t.Context()))
				}
				waited <- err
			}()
			// The waiter subscribed, and the attempt it makes once
			// subscribed failed: its next poll is 10 s away. (A sleep of
			// a second stood here: on a loaded machine the waiter could
			// subscribe later, or make that attempt only after the
			// release below, and take the lock at once.)
			seen.wait(t)
			slot := redistest.KeySlot(key)
			m, err := c.StartMigration(t.Context(), slot, c.Shards()[(c.SlotShard(slot).Index()+1)%2])
			require.NoError(t, err)
			moved, err := m.MoveKeys(t.Context(), 10)
			require.NoError(t, err)
			require.Equal(t, []string{key}, moved)
			require.NoError(t, l.Unlock(t.Context()))
			select {
			case err := <-waited:
				t.Fatalf("the waiter heard the release (its Lock: %v): the README's caveat can go", err)
			case <-time.After(2 * time.Second):
			}
			select {
			case err := <-waited:
				require.NoError(t, err, "the waiter's Lock, at its next poll")
			case <-time.After(30 * time.Second):
				t.Fatal("the waiter did not take the lock 30 s after its release")
			}
			require.NoError(t, m.Finish(t.Context()))
		})
	}
}

// subscribedAttempts is an Observer of a waiter that tells when it has
// subscribed to its key's releases and an attempt that it began after that
// ended.
type subscribedAttempts struct {
	redlock.NopObserver
	mu         sync.Mutex
	subscribed bool
	began      bool // an attempt began after the subscription
	ended      bool // and ended
}

func (o *subscribedAttempts) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation == redlock.OpSubscribe && e.Err == nil {
		o.mu.Lock()
		o.subscribed = true
		o.mu.Unlock()
	}
}

func (o *subscribedAttempts) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.subscribed || o.began {
		return ctx, nil
	}
	o.began = true
	return ctx, func(redlock.AttemptDone) {
		o.mu.Lock()
		o.ended = true
		o.mu.Unlock()
	}
}

// wait waits, up to 10s, until the waiter has subscribed and an attempt it
// began after that ended.
func (o *subscribedAttempts) wait(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.ended
	}, 10*time.Second, 5*time.Millisecond, "the waiter's attempt after it subscribed")
}
