package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Where SPUBLISH is missing (a server older than Redis 7.0, stood for here by
// servers whose SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE are renamed away), a
// release still succeeds, since the release script publishes in a pcall
// after its DEL, and a waiter, whose subscriptions fail, takes the lock by
// polling. The README and the release script said so; no test had run a
// release, nor a waiter, against a server without the sharded pub/sub
// commands (found in an outside check of the cluster issue).
func TestRedisWithoutShardedPubSub(t *testing.T) {
	missing := []redistest.Option{
		redistest.WithConfig("rename-command", "SPUBLISH", ""),
		redistest.WithConfig("rename-command", "SSUBSCRIBE", ""),
		redistest.WithConfig("rename-command", "SUNSUBSCRIBE", ""),
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			servers := redistest.NewServers(t, 3, missing...)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := servers[0].Do(ctx, "SPUBLISH", "c", "")
			require.ErrorContains(t, err, "unknown command", "SPUBLISH must be missing on the test's servers")

			opts := []redlock.Option{redlock.WithFencing(), redlock.WithNodeTimeout(liveNodeTimeout)}
			holder := openRedis(t, name, servers, opts...)
			waiter := openRedis(t, name, servers, append(opts, redlock.WithBackoff(redlock.ConstantBackoff(50*time.Millisecond)))...)

			// A release with no waiter: Unlock succeeds and the key is
			// gone from every server (the releases to the last node may
			// land after Unlock returned at a quorum).
			l, err := holder.TryLock(ctx, "alone")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx), "Unlock without SPUBLISH")
			require.Eventually(t, func() bool { return keysLeft(t, servers, "alone") == 0 },
				10*time.Second, 10*time.Millisecond, "the release left the key on a server")

			// A waiter polls and takes the lock once the holder releases it.
			l, err = holder.TryLock(ctx, "waited")
			require.NoError(t, err)
			type result struct {
				token uint64
				err   error
			}
			got := make(chan result, 1)
			go func() {
				w, err := waiter.Lock(ctx, "waited")
				if err != nil {
					got <- result{err: err}
					return
				}
				got <- result{w.Token(), w.Unlock(ctx)}
			}()
			time.Sleep(100 * time.Millisecond) // let the waiter try, and subscribe, first
			require.NoError(t, l.Unlock(ctx), "Unlock without SPUBLISH, a waiter waiting")
			r := <-got
			require.NoError(t, r.err, "the waiter's Lock after the release")
			require.Greater(t, r.token, l.Token(), "the waiter's fencing token")
		})
	}
}
