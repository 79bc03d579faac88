package safety_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// TestCloseUnderFaultsLeavesNoGoroutine: a holder's links to three of five
// nodes drop everything, lose the replies, or deliver them after twice the
// TTL, while it holds a lock with Lock, holds another through Do, has failed
// to extend and to release the first (so that releases are repeated in the
// background), and while a second Client of the same process waits for the
// lock that a third holds (subscribed to its releases). The Clients are closed with the
// faults still in force; then the servers and proxies go. Counted as
// violations: Do or the waiting Lock not returning within 10s of Close,
// and any goroutine running the library's or a Redis client library's code
// 10s after everything was closed, beyond those there before. Through every
// driver. Not parallel: it counts the goroutines of the whole test binary.
func TestCloseUnderFaultsLeavesNoGoroutine(t *testing.T) {
	const (
		ttl         = 2 * time.Second
		nodeTimeout = 200 * time.Millisecond
	)
	before := libraryGoroutines()
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			ns := startNodes(t, 5)
			opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout)}
			a, err := redlock.Open(d, ns.addrs(), opts...)
			require.NoError(t, err)
			defer a.Close()
			wLinks := faultproxy.NewProxies(t, ns.servers)
			w, err := redlock.Open(d, redistest.Addrs(wLinks), opts...)
			require.NoError(t, err)
			defer w.Close()
			ns.warmAll(t, a)
			warm(t, w)

			l, err := a.Lock(t.Context(), "leftover")
			require.NoError(t, err)
			doStarted, doErr := make(chan struct{}), make(chan error, 1)
			go func() {
				doErr <- a.Do(context.Background(), "leftover-do", func(ctx context.Context) error {
					close(doStarted)
					<-ctx.Done()
					return nil
				})
			}()
			<-doStarted
			// The waiter waits for a lock that a third Client holds over
			// the waiter's healthy links, for longer than the test.
			h, err := redlock.Open(d, redistest.Addrs(wLinks), redlock.WithTTL(time.Minute))
			require.NoError(t, err)
			defer h.Close()
			_, err = h.Lock(t.Context(), "leftover-held")
			require.NoError(t, err)
			waitErr := make(chan error, 1)
			go func() {
				_, err := w.Lock(context.Background(), "leftover-held")
				waitErr <- err
			}()
			require.Eventually(t, func() bool { return len(subscribed(t, ns, "leftover-held")) > 0 },
				10*time.Second, 10*time.Millisecond, "the waiter subscribed to the key's releases")

			require.NoError(t, ns.proxies[0].Blackhole())
			require.NoError(t, ns.proxies[1].LoseReplies())
			require.NoError(t, ns.proxies[2].SetLatency(0, 2*ttl))
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			require.Error(t, l.Extend(ctx, ttl))
			require.Error(t, l.Unlock(ctx))

			closed := time.Now()
			require.NoError(t, a.Close())
			require.NoError(t, w.Close())
			require.NoError(t, h.Close())
			for name, ch := range map[string]chan error{"Do": doErr, "the waiting Lock": waitErr} {
				select {
				case err := <-ch:
					if name == "Do" {
						require.ErrorIs(t, err, redlock.ErrLockLost, name)
					} else {
						require.ErrorIs(t, err, redlock.ErrClosed, name)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s did not return within 10s of Close", name)
				}
			}
			measured(t, "%s: both Clients closed under faults in %v", d, time.Since(closed).Round(time.Millisecond))
			// With the faults still in force and the servers up: what the
			// Clients started has ended.
			left := waitGoroutines(before, 10*time.Second)
			require.Empty(t, left, "goroutines in the library's or a client library's code 10s after the Clients were closed, the faults in force")
		})
	}
	// The subtests' cleanups have closed the proxies and the servers.
	left := waitGoroutines(before, 10*time.Second)
	require.Empty(t, left, "goroutines in the library's or a client library's code 10s after every Client, proxy and server was closed")
}

// waitGoroutines waits up to bound for the library goroutines (see
// libraryGoroutines) to be none but those of before, and returns the others.
func waitGoroutines(before []string, bound time.Duration) []string {
	deadline := time.Now().Add(bound)
	for {
		left := newGoroutines(before, libraryGoroutines())
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// libraryGoroutines returns the stacks (without their headers, which carry
// the goroutine's ID and state) of the goroutines that run code of this
// library or of a Redis client library, and not of the test itself.
func libraryGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		_, body, _ := strings.Cut(g, "\n")
		if strings.Contains(body, "safety_test.") || strings.Contains(body, "safety/faultproxy") || strings.Contains(body, "/redistest.") || strings.Contains(body, "internal/redisserver") || strings.Contains(body, "internal/deathsig.spawner") {
			continue // the test's own, the proxies', the servers' (and the process-wide thread that starts them)
		}
		for _, pkg := range []string{"go-redlock/redlock/", "gomodule/redigo", "redis/go-redis", "redis/rueidis", "valkey-io/valkey-go"} {
			if strings.Contains(body, pkg) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// newGoroutines returns the stacks of after beyond those of before, matched
// by their first frame.
func newGoroutines(before, after []string) []string {
	seen := map[string]int{}
	key := func(g string) string {
		_, body, _ := strings.Cut(g, "\n")
		first, _, _ := strings.Cut(body, "\n")
		return first
	}
	for _, g := range before {
		seen[key(g)]++
	}
	var out []string
	for _, g := range after {
		if seen[key(g)] > 0 {
			seen[key(g)]--
			continue
		}
		out = append(out, g)
	}
	return out
}
