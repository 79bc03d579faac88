package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// connectGoroutines returns the stacks of the goroutines that run
// Connect's code: its own frame or one of its questions (a closure of
// Connect's).
func connectGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "redlock.(*Client).Connect") {
			found = append(found, g)
		}
	}
	return found
}

// An ACL user without +info: every node refuses the question for good
// (NOPERM). Connect returns nil (the nodes are up), the observers hear each
// refusal, the Client takes locks, and the acquisitions do not ask the
// nodes again (their identities stay unknown: a refusal is for good, see
// TestIdentityRefusedAskedOnce), through every Redis driver.
func TestRedisConnectUserWithoutInfo(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, s := range servers {
		_, err := s.Do(t.Context(), "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info")
		require.NoError(t, err)
	}
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = "redis://noinfo:pw@" + s.Addr()
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			rec := &identityCalls{}
			c, err := redlock.Open(name, addrs, append(slow[:len(slow):len(slow)], redlock.WithObserver(rec))...)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, c.Connect(ctx), "nodes that refuse the question are up")
			rec.mu.Lock()
			require.Len(t, rec.calls, 3, "one refusal heard per node")
			for _, e := range rec.calls {
				require.ErrorContains(t, e.Err, "NOPERM")
			}
			rec.mu.Unlock()
			l, err := c.TryLock(t.Context(), name+"/k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			redlock.WaitIdle(c)
			rec.mu.Lock()
			require.Len(t, rec.calls, 3, "the acquisition asked a node that refused the question again")
			rec.mu.Unlock()
		})
	}
}

// No goroutine of Connect's is left once it returns: after a quorum and the
// grace (one node silent), after ctx's end (every node silent), at Close
// (every node silent, no deadline), and after ErrUnavailable (two nodes
// refuse connections, one is silent).
func TestRedisConnectLeavesNoGoroutine(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	silent := []string{redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr()}
	down := redistest.DownAddrs(t, 2)
	opts := []redlock.Option{redlock.WithTTL(20 * time.Minute), redlock.WithNodeTimeout(2 * time.Second)}
	settled := func(t *testing.T) {
		t.Helper()
		// The question's goroutine may still run its deferred counts
		// (it has sent its answer): give it a moment.
		require.Eventually(t, func() bool { return len(connectGoroutines()) == 0 }, 10*time.Second, 5*time.Millisecond,
			"Connect's goroutines left: %v", connectGoroutines())
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, []string{servers[0].Addr(), silent[0], servers[1].Addr()}, opts...)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, c.Connect(ctx))
			settled(t)

			short, cancelShort := context.WithTimeout(t.Context(), 300*time.Millisecond)
			defer cancelShort()
			all, err := redlock.Open(name, silent, opts...)
			require.NoError(t, err)
			defer all.Close()
			require.ErrorIs(t, all.Connect(short), context.DeadlineExceeded)
			settled(t)

			closing, err := redlock.Open(name, silent, opts...)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- closing.Connect(context.Background()) }()
			require.Eventually(t, func() bool { return len(connectGoroutines()) > 1 }, 10*time.Second, time.Millisecond, "Connect asks")
			require.NoError(t, closing.Close())
			require.ErrorIs(t, <-done, redlock.ErrClosed)
			settled(t)

			unavailable, err := redlock.Open(name, []string{down[0], silent[1], down[1]}, opts...)
			require.NoError(t, err)
			defer unavailable.Close()
			err = unavailable.Connect(ctx)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
			settled(t)
		})
	}
}

// Nodes that never answer, and a deadline: Connect returns the context's
// error, never ErrUnavailable, whichever way a driver's question ends at
// the deadline (a connection deadline set from ctx's may pass before ctx's
// own timer ends it). Repeated, as the order of the two is the machine's.
func TestRedisConnectSilentDeadlineIsContextsError(t *testing.T) {
	silent := []string{redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr(), redistest.NewSilent(t).Addr()}
	opts := []redlock.Option{redlock.WithTTL(20 * time.Minute), redlock.WithNodeTimeout(10 * time.Minute)}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, silent, opts...)
			require.NoError(t, err)
			defer c.Close()
			for i := range 20 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(20+i*7)*time.Millisecond)
				err := c.Connect(ctx)
				cancel()
				require.ErrorIs(t, err, context.DeadlineExceeded, "try %d", i)
				require.False(t, errors.Is(err, redlock.ErrUnavailable), "try %d: %v", i, err)
			}
		})
	}
}

// After a Connect that one node missed (it was down), the node comes back
// as another address of a server that answered: the acquisitions ask it and
// fail with the duplicate, as without Connect; a later Connect returns the
// same error. The first acquisition finds it when the node answers it
// within its grace (the time its SET round took, 10ms at least); the node's
// calls first make a connection (Connect's was closed by the proxy), which
// on a loaded machine took longer, and the acquisition, with the node's SET
// not answered, took it as distinct and took the lock on the two others, as
// Connect's doc and the identity check's allow (rueidis and valkeygo once
// each in a -race run of the package beside other work, load 11; 23 of 240
// subtests beside four CPU-spinning processes, its SET unanswered): the
// node's identity comes later, and the acquisitions fail from then on
// (duplicateFound).
func TestRedisConnectMissedNodeLaterDuplicate(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			// The missed node: a proxy that refuses until it is
			// opened, then forwards to servers[0].
			p := testproxy.New(t, servers[0].Addr(), testproxy.Gated())
			c, err := redlock.Open(name, []string{servers[0].Addr(), servers[1].Addr(), p.Addr()}, slow...)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, c.Connect(ctx), "a quorum answered")
			p.Open()
			err = duplicateFound(t, c, name+"/k")
			require.ErrorContains(t, err, "reach the same server")
			require.Equal(t, err, c.Connect(ctx))
		})
	}
}

// Connects at once with each other, with TryLock, Lock and Do, and with a
// Close that comes while they run, through every Redis driver (-race):
// each ends with nil or ErrClosed, or, for a Do whose function ran when
// Close came, ErrLockLost itself (Close ended its lock: EndClosed, whose Do
// error is the sentinel, see Do's doc and TestDoClosedHasLockEndErr), and
// no Connect goroutine is left.
func TestRedisConnectConcurrentWithAcquisitionsAndClose(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, redistest.Addrs(servers), slow...)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			errs := make(chan error, 17) // 4 of each, and Close
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() { errs <- c.Connect(ctx) })
				wg.Go(func() {
					l, err := c.TryLock(ctx, fmt.Sprint(name, "/t", g))
					if err == nil {
						err = l.Unlock(ctx)
					}
					errs <- err
				})
				wg.Go(func() {
					l, err := c.Lock(ctx, fmt.Sprint(name, "/l", g))
					if err == nil {
						err = l.Unlock(ctx)
					}
					errs <- err
				})
				wg.Go(func() {
					err := c.Do(ctx, fmt.Sprint(name, "/d", g), func(context.Context) error { return nil })
					if err == redlock.ErrLockLost { //nolint:errorlint // the sentinel itself, not a join
						err = nil
					}
					errs <- err
				})
			}
			wg.Go(func() { errs <- c.Close() })
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					require.ErrorIs(t, err, redlock.ErrClosed)
				}
			}
			require.Empty(t, connectGoroutines())
			require.ErrorIs(t, c.Connect(ctx), redlock.ErrClosed)
		})
	}
}
