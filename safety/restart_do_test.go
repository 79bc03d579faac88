package safety_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
)

// TestDoRollingRestartsWithoutPersistence: the holder is Do (which the
// command's run and hold use), extending the lock every TTL/3, over nodes
// without persistence; three of the five crash one after another, 300ms
// apart, while B keeps trying. Scenarios 8 and 9 crash a node under a Lock
// that no one extends.
//
//   - delayed: each node comes back empty after TTL + 300ms, as SAFETY.md
//     asks. Safe: the extensions keep a quorum while two nodes are down, fail
//     once three are, and every key they wrote has expired before a node that
//     forgot it serves again. Violation: B granted while fn runs (before its
//     context's end), or fn's context never ended.
//   - at once: each node comes back empty immediately. Unsafe: B takes the
//     three forgetful nodes while fn still runs, until Do's next extension
//     finds the lock lost (Do must return ErrLockLost); the overlap is
//     measured, not asserted, since an extension that runs between the third
//     restart and B's grant ends fn first (scenario 8 asserts the double
//     grant).
//
// Through every driver.
func TestDoRollingRestartsWithoutPersistence(t *testing.T) {
	t.Parallel()
	const (
		ttl         = 2 * time.Second
		nodeTimeout = 200 * time.Millisecond
		gap         = 300 * time.Millisecond
	)
	for _, d := range redisDrivers {
		for _, delayed := range []bool{true, false} {
			name := d + "/at-once"
			if delayed {
				name = d + "/delayed"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ns := startNodes(t, 5) // defaults: no RDB, no AOF
				key := "rolling-restart"
				a := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
				b := open(t, d, ns.addrs(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout),
					redlock.WithBackoff(redlock.ConstantBackoff(10*time.Millisecond)))
				ns.warmAll(t, a)
				warm(t, b)

				var (
					mu                sync.Mutex
					fnStart, canceled time.Time
				)
				crashed := make(chan struct{})
				restarts := make(chan error, 3)
				doErr := make(chan error, 1)
				go func() {
					doErr <- a.Do(t.Context(), key, func(ctx context.Context) error {
						mu.Lock()
						fnStart = time.Now()
						mu.Unlock()
						// Held for a few extensions first.
						select {
						case <-time.After(ttl):
						case <-ctx.Done():
						}
						if ctx.Err() == nil {
							close(crashed)
							<-ctx.Done()
						}
						mu.Lock()
						canceled = time.Now()
						mu.Unlock()
						return nil
					})
				}()
				select {
				case <-crashed:
				case err := <-doErr:
					t.Fatalf("Do ended before the crashes: %v", err)
				}
				for i := range 3 {
					s := ns.servers[i]
					if delayed {
						require.NoError(t, s.Kill())
						go func() { restarts <- s.RestartAfter(context.WithoutCancel(t.Context()), ttl+gap) }()
					} else {
						require.NoError(t, s.Restart(t.Context()))
						restarts <- nil
					}
					if i < 2 {
						time.Sleep(gap)
					}
				}
				// B tries from the third crash on.
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				lb, err := b.Lock(ctx, key)
				require.NoError(t, err)
				bGranted := time.Now()
				var derr error
				select {
				case derr = <-doErr:
				case <-time.After(20 * time.Second):
					t.Fatal("fn's context did not end within 20s of the crashes")
				}
				require.True(t, errors.Is(derr, redlock.ErrLockLost), "Do: %v", derr)
				for range 3 {
					require.NoError(t, <-restarts)
				}
				mu.Lock()
				aGrant := chaos.Grant{Holder: "A (Do)", Start: fnStart, End: canceled}
				mu.Unlock()
				overlaps := chaos.Overlaps([]chaos.Grant{aGrant, {Holder: "B", Start: bGranted, End: lb.Until()}})
				if delayed {
					require.Empty(t, overlaps, "delayed restarts: B granted while fn ran")
					measured(t, "%s, delayed restarts: fn's context ended, B granted %v later", d, bGranted.Sub(canceled).Round(time.Millisecond))
				} else if len(overlaps) > 0 {
					measured(t, "%s, restarts at once: %v", d, overlaps[0])
				} else {
					// An extension that ran between the third restart and
					// B's grant ended fn first: no overlap this time.
					measured(t, "%s, restarts at once: no overlap this run (B granted %v after fn's context ended)", d, bGranted.Sub(canceled).Round(time.Millisecond))
				}
				// B's releases may outlast the 200ms node timeout on a
				// loaded machine ("lock lost" with their timeouts, 1 run
				// in 24 at load 17): see unlockSlow.
				unlockSlow(t, lb)
			})
		}
	}
}
