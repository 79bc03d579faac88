package redlock_test

import (
	"context"
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
			open := func(opts ...redlock.Option) *redlock.Client {
				cl, err := redlock.Open(name, []string{c.URL()}, append([]redlock.Option{redlock.WithTTL(30 * time.Second)}, opts...)...)
				require.NoError(t, err)
				t.Cleanup(func() { cl.Close() })
				return cl
			}
			holder, waiter := open(), open(redlock.WithBackoff(redlock.ConstantBackoff(backoff)))
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
			time.Sleep(time.Second) // the waiter's first attempt failed, it subscribed, and its next poll is 10 s away
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
