package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	_ "github.com/go-redlock/redlock/drivers/goredis"
	_ "github.com/go-redlock/redlock/drivers/rueidis"
	_ "github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

const reviewClusterPassword = "pw-Rk29dzq"

// Locks on three nodes that are Redis Clusters, through each cluster
// driver: a lock held while its key's slot migrates on every cluster stays
// exclusive, extends and unlocks; a waiter in Lock that subscribed before
// the migration hears the release (its backoff is far longer than the
// bound); with the key's primary down on one cluster, the lock is still
// exclusive on the two left, and the errors name the node without its
// password.
func TestReviewClusterLockAcrossMigrationAndDownPrimary(t *testing.T) {
	for _, name := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(name, func(t *testing.T) {
			cls := redistest.NewClusters(t, 3, 2, redistest.WithServerOptions(redistest.WithPassword(reviewClusterPassword)))
			addrs := make([]string, len(cls))
			for i, c := range cls {
				addrs[i] = c.URL()
			}
			// A node timeout of 2s, not the default 200ms (TTL/10, at most
			// MaxNodeTimeout): a cluster node's first call connects, with
			// AUTH, and reads the slot map, and the calls after the
			// migration follow MOVED; on a loaded machine under -race two
			// of the holder's three first calls took longer than 200ms
			// (valkeygo: its first TryLock not obtained, "context deadline
			// exceeded" on two clusters). What the test checks does not
			// depend on it: with the primary down, the two other nodes
			// decide.
			open := func(opts ...redlock.Option) *redlock.Client {
				c, err := redlock.Open(name, addrs, append([]redlock.Option{redlock.WithFencing(), redlock.WithTTL(30 * time.Second),
					redlock.WithNodeTimeout(2 * time.Second)}, opts...)...)
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				return c
			}
			holderC, waiterC, otherC := open(), open(redlock.WithBackoff(func(int) time.Duration { return 20 * time.Second })), open()
			const key = "review-migrating"

			a, err := holderC.TryLock(t.Context(), key)
			require.NoError(t, err)

			type got struct {
				l   *redlock.Lock
				err error
				at  time.Time
			}
			waited := make(chan got, 1)
			wctx, wcancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer wcancel()
			go func() {
				l, err := waiterC.Lock(wctx, key)
				waited <- got{l, err, time.Now()}
			}()
			time.Sleep(time.Second) // the waiter's first attempt fails, and it subscribes

			slot := redistest.KeySlot(key)
			for _, c := range cls {
				to := c.Shards()[(c.SlotShard(slot).Index()+1)%len(c.Shards())]
				require.NoError(t, c.MigrateSlot(t.Context(), slot, to))
			}

			_, err = otherC.TryLock(t.Context(), key)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "a lock held while its slot moved")
			require.NoError(t, a.Extend(t.Context(), 30*time.Second), "Extend after the slot moved")

			released := time.Now()
			require.NoError(t, a.Unlock(t.Context()))
			var w got
			select {
			case w = <-waited:
			case <-time.After(30 * time.Second):
				t.Fatal("the waiter did not get the lock 30s after its release")
			}
			require.NoError(t, w.err)
			took := w.at.Sub(released)
			t.Logf("the waiter got the lock %v after the release", took.Round(time.Millisecond))
			// Its backoff is 20s: a waiter that polled would take as long.
			require.Less(t, took, 8*time.Second, "the waiter, subscribed before its key's slot moved, did not hear the release")
			require.Greater(t, w.l.Token(), a.Token())

			require.NoError(t, w.l.Unlock(t.Context()))

			// A lock taken without contention, then the key's primary dies on
			// cluster 0 (no replica): the lock stays exclusive, since it is on
			// at least one of the two nodes left.
			l, err := otherC.TryLock(t.Context(), key)
			require.NoError(t, err)
			require.Greater(t, l.Token(), w.l.Token())
			require.NoError(t, cls[0].SlotShard(slot).Primary().Kill())
			_, err = holderC.TryLock(t.Context(), key)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "a lock held with a primary down")
			require.NotContains(t, err.Error(), reviewClusterPassword)
			t.Logf("TryLock with a primary down: %v", err)
			err = l.Extend(t.Context(), 30*time.Second)
			t.Logf("Extend with a primary down: %v", err)
			if err != nil {
				require.NotContains(t, err.Error(), reviewClusterPassword)
				var ne *redlock.NodeError
				require.True(t, errors.Is(err, redlock.ErrLockLost) || errors.As(err, &ne), "%v", err)
			}
			err = l.Unlock(t.Context())
			t.Logf("Unlock with a primary down: %v", err)
			if err != nil {
				require.NotContains(t, err.Error(), reviewClusterPassword)
			}
			l2, err := holderC.TryLock(t.Context(), key)
			require.NoError(t, err, "after the release, on 2 of 3 nodes")
			require.Greater(t, l2.Token(), l.Token())
			if err := l2.Unlock(t.Context()); err != nil && strings.Contains(err.Error(), reviewClusterPassword) {
				t.Errorf("password in %v", err)
			}
		})
	}
}
