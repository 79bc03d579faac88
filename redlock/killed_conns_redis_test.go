package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// killConns has every server close every connection of the library
// (CLIENT KILL TYPE normal; the killing connection itself is spared), as a
// server's timeout or an operator's kill would, while the pools hold them
// idle and recently used.
func killConns(t *testing.T, servers []*redistest.Server) {
	t.Helper()
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := s.Do(ctx, "CLIENT", "KILL", "TYPE", "normal")
		cancel()
		require.NoError(t, err)
	}
}

// TestReviewCallsRightAfterConnectionsKilled: the servers close every
// connection of the Client's nodes (CLIENT KILL) just after a lock was
// taken, and the next call comes at once. Every driver must get through on
// a new connection: with redigo, whose pool handed out a connection used
// less than a second before without checking it, the Unlock failed on the
// dead connections (ErrUnavailable), its background repeat found more dead
// connections, and a Close that followed left the keys on every node for
// the whole TTL; Extend failed the same way, and a TryLock failed on every
// node (its SET NX was never sent twice).
func TestReviewCallsRightAfterConnectionsKilled(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	const ttl = time.Minute
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			// A node timeout that a loaded machine does not exhaust.
			c, err := redlock.Open(name, redistest.Addrs(servers), redlock.WithNodeTimeout(2*time.Second))
			require.NoError(t, err)
			defer c.Close()
			ctx := t.Context()
			key := func(op string) string { return fmt.Sprintf("killed-%s-%s", name, op) }
			lock := func(op string) *redlock.Lock {
				t.Helper()
				l, err := c.TryLock(ctx, key(op), redlock.WithTTL(ttl))
				require.NoError(t, err, "TryLock before the kill")
				// Several connections in each pool, all recently used.
				for range 3 {
					require.NoError(t, l.Extend(ctx, ttl), "Extend before the kill")
				}
				return l
			}

			t.Run("Unlock", func(t *testing.T) {
				l := lock("unlock")
				killConns(t, servers)
				require.NoError(t, l.Unlock(ctx), "Unlock right after the kill")
				// Unlock returns once a quorum answered; the last node's
				// release may still be on its way, or repeated after a
				// failure: it must be gone well within the TTL.
				require.Eventually(t, func() bool { return keysLeft(t, servers, key("unlock")) == 0 },
					15*time.Second, 10*time.Millisecond, "nodes still holding the key after Unlock")
			})
			t.Run("Extend", func(t *testing.T) {
				l := lock("extend")
				defer l.Unlock(context.WithoutCancel(ctx))
				killConns(t, servers)
				require.NoError(t, l.Extend(ctx, ttl), "Extend right after the kill")
			})
			t.Run("TryLock", func(t *testing.T) {
				// A SET NX sent on a connection the server had closed goes
				// again on a new one, as driver.SetNXAgainScript (see
				// rediscmd.Cmd.Again): the TryLock right after the kill
				// gets the free key. With redigo it failed on every node
				// (EOF), 3 runs of 3, when a SET NX was never sent twice.
				l := lock("trylock-warm")
				defer l.Unlock(context.WithoutCancel(ctx))
				killConns(t, servers)
				l2, err := c.TryLock(ctx, key("trylock"), redlock.WithTTL(ttl))
				require.NoError(t, err, "TryLock right after the kill")
				require.NoError(t, l2.Unlock(ctx))
			})
			t.Run("UnlockThenClose", func(t *testing.T) {
				// The command's case: the release, then Close at once.
				c2, err := redlock.Open(name, redistest.Addrs(servers), redlock.WithNodeTimeout(2*time.Second))
				require.NoError(t, err)
				l, err := c2.TryLock(ctx, key("close"), redlock.WithTTL(ttl))
				require.NoError(t, err)
				for range 3 {
					require.NoError(t, l.Extend(ctx, ttl))
				}
				killConns(t, servers)
				uerr := l.Unlock(ctx)
				require.NoError(t, c2.Close())
				require.Zero(t, keysLeft(t, servers, key("close")), "nodes still holding the key after Unlock (%v) and Close", uerr)
			})
		})
	}
}

// TestReviewUnlockRightAfterServersRestarted: the servers restart (a crash,
// with an append-only file that keeps the keys) while the Client holds a
// lock, and the Unlock comes as soon as they answer again: it must release
// the key on every node through every driver, before a Close that follows
// (the command's case). With redigo the release went out on the pool's
// dead connections, and the keys stayed for the whole TTL.
func TestReviewUnlockRightAfterServersRestarted(t *testing.T) {
	servers := redistest.NewServers(t, 3, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
	const ttl = time.Minute
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := "restarted-" + name
			c, err := redlock.Open(name, redistest.Addrs(servers), redlock.WithNodeTimeout(2*time.Second))
			require.NoError(t, err)
			l, err := c.TryLock(ctx, key, redlock.WithTTL(ttl))
			require.NoError(t, err)
			for range 3 {
				require.NoError(t, l.Extend(ctx, ttl))
			}
			for _, s := range servers {
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				require.NoError(t, s.Restart(rctx))
				cancel()
			}
			require.Equal(t, len(servers), keysLeft(t, servers, key), "the servers kept the key across the restart")
			uerr := l.Unlock(ctx)
			require.NoError(t, c.Close())
			require.Zero(t, keysLeft(t, servers, key), "nodes still holding the key after Unlock (%v) and Close", uerr)
		})
	}
}
