package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A waiter whose release subscriptions broke, and the lock released before
// they were made again, hears of it once they are: it tries again then,
// rather than sleep through the release until its next poll (a minute
// here; before, Lock waited that minute, and the test's 10s ran out).
func TestRedisWaiterHearsReleaseMissedWhileResubscribing(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			holder := openRedis(t, name, servers)
			waiter := openRedis(t, name, servers, redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
			key := "missed-" + name
			held, err := holder.TryLock(ctx, key)
			require.NoError(t, err)
			got := make(chan error, 1)
			go func() {
				l, err := waiter.Lock(ctx, key)
				if err == nil {
					err = l.Unlock(ctx)
				}
				got <- err
			}()
			subscribedOnEvery(t, servers, driver.ReleaseChannel(key))
			time.Sleep(100 * time.Millisecond) // the waiter's attempt after subscribing ends: it waits its Backoff
			for _, s := range servers {
				_, err := s.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub")
				require.NoError(t, err)
			}
			require.NoError(t, held.Unlock(ctx)) // heard by no one
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter slept through a release published while its subscriptions were being made again")
			}
		})
	}
}
