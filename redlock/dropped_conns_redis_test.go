package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestFirstCallsRightAfterServersRestarted: the servers restart (with an
// append-only file, so that they keep the held lock's key) while the
// Client's pools hold connections, all recently used, and the first calls
// come as soon as the servers answer again. Each must get through on a new
// connection, through every driver: a TryLock of a free key, an Extend and
// a TTL of the held lock. With redigo the TryLock failed on every node
// (EOF), 3 runs of 3, when a SET NX was never sent twice.
func TestFirstCallsRightAfterServersRestarted(t *testing.T) {
	servers := redistest.NewServers(t, 3, redistest.WithConfig("appendonly", "yes"), redistest.WithConfig("appendfsync", "always"))
	const ttl = time.Minute
	// The servers restart at once (each kill and start waits on its own
	// process), and restart returns once all three answer again.
	restart := func(t *testing.T) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		errs := make([]error, len(servers))
		var wg sync.WaitGroup
		for i, s := range servers {
			wg.Go(func() { errs[i] = s.Restart(ctx) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			// A node timeout that a loaded machine does not exhaust.
			c := openRedis(t, name, servers, redlock.WithNodeTimeout(2*time.Second))
			held, err := c.TryLock(ctx, "restarted-held-"+name, redlock.WithTTL(ttl))
			require.NoError(t, err)
			defer held.Unlock(context.WithoutCancel(ctx))
			warm := func() {
				for range 3 {
					require.NoError(t, held.Extend(ctx, ttl), "Extend before the restart")
				}
			}

			warm()
			restart(t)
			l, err := c.TryLock(ctx, "restarted-free-"+name, redlock.WithTTL(ttl))
			require.NoError(t, err, "TryLock right after the restart")
			require.NoError(t, l.Unlock(ctx))

			warm()
			restart(t)
			require.NoError(t, held.Extend(ctx, ttl), "Extend right after the restart")

			warm()
			restart(t)
			left, err := held.TTL(ctx)
			require.NoError(t, err, "TTL right after the restart")
			require.Positive(t, left)
		})
	}
}

// TestTryLockOnDroppingServersFailsPromptly: the repeat of a call whose
// connection the server closed is one, not a loop. Against servers that
// are down (a refused dial) and servers that close every connection they
// accept, a TryLock fails with ErrUnavailable, by the node timeout rather
// than at its context's end, and a server that closes every connection
// sees only a few of them per call, whatever the driver.
func TestTryLockOnDroppingServersFailsPromptly(t *testing.T) {
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			t.Run("Down", func(t *testing.T) {
				servers := redistest.NewServers(t, 3)
				for _, s := range servers {
					require.NoError(t, s.Kill())
				}
				c := openRedis(t, name, servers, redlock.WithNodeTimeout(2*time.Second))
				// Far longer than the node timeout, which ends the call.
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				_, err := c.TryLock(ctx, "down", redlock.WithTTL(time.Minute))
				require.ErrorIs(t, err, redlock.ErrUnavailable)
				require.False(t, errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil, "TryLock ran to its context's end: %v", err)
			})
			t.Run("ClosingEveryConnection", func(t *testing.T) {
				// Servers that close every connection they accept at
				// once, as a server that drops its clients would, and
				// count them: gated proxies never opened, which never
				// dial their upstream.
				nowhere := redistest.DownAddrs(t, 1)[0]
				closing := []*testproxy.Proxy{
					testproxy.New(t, nowhere, testproxy.Gated()),
					testproxy.New(t, nowhere, testproxy.Gated()),
					testproxy.New(t, nowhere, testproxy.Gated()),
				}
				addrs := make([]string, len(closing))
				for i, s := range closing {
					addrs[i] = s.Addr()
				}
				c, err := redlock.Open(name, addrs, redlock.WithNodeTimeout(2*time.Second))
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				_, err = c.TryLock(ctx, "closing", redlock.WithTTL(time.Minute))
				require.ErrorIs(t, err, redlock.ErrUnavailable)
				require.False(t, errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil, "TryLock ran to its context's end: %v", err)
				// Close waits for what the TryLock left running (the
				// release of its key where the SET failed), whose
				// connections count too: counted at TryLock's return,
				// goredis's were 3 or, when that release had already
				// dialed, 5 (5 of 300 runs over 4, the bound then).
				require.NoError(t, c.Close())
				// Per node, the SET NX, the Client's question of which
				// server it is and that release: each a first dial and at
				// most one redial of a connection found closed. Measured
				// after Close: goredis 5, redigo 3, rueidis and valkeygo 2.
				const calls = 3
				for i, s := range closing {
					require.LessOrEqual(t, s.Accepted(), int64(2*calls), "connections to node %d for one TryLock", i)
				}
			})
		})
	}
}
