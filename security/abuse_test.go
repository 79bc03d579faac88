package security_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// connections counts the client connections of srv other than the one that
// asks, by CLIENT LIST.
func connections(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	v, err := srv.Do(t.Context(), "CLIENT", "LIST")
	require.NoError(t, err)
	return strings.Count(v.(string), "\n") - 1
}

// Thousands of Lock calls, each with a short deadline, against five nodes of
// which three are down (killed): every call gives up within its deadline and
// one node timeout, with ErrNotObtained and the context's error; the live
// nodes see no more connections than there are concurrent callers; and once
// the clients are closed, no goroutine and no connection is left.
func TestAbuseMajorityDown(t *testing.T) {
	const (
		calls       = 1000 // per driver
		concurrency = 16
		deadline    = 20 * time.Millisecond
		nodeTimeout = 50 * time.Millisecond
	)
	// Scheduling delays on a busy machine: a call that waited for one of
	// the clients' own timeouts (seconds) would still be caught.
	slack := 500 * time.Millisecond
	if raceEnabled {
		slack = 2 * time.Second
	}
	// The pools of go-redis and redigo hold at most max(64, 10*GOMAXPROCS)
	// connections, and there is one pub/sub connection.
	maxConns := max(64, 10*runtime.GOMAXPROCS(0)) + 1
	servers := redistest.NewServers(t, 5)
	for _, s := range servers[:3] {
		require.NoError(t, s.Kill())
	}
	live := servers[3:]
	base := make([]int, len(live))
	for i, s := range live {
		base[i] = connections(t, s)
	}
	ignore := goleak.IgnoreCurrent() // the test binary's and redistest's own

	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			c, err := redlock.Open(d.name, redistest.Addrs(servers),
				redlock.WithTTL(time.Second), redlock.WithNodeTimeout(nodeTimeout),
				redlock.WithBackoff(redlock.ConstantBackoff(5*time.Millisecond)))
			require.NoError(t, err)
			closed := false
			defer func() {
				if !closed {
					c.Close()
				}
			}()
			var (
				next    atomic.Int64
				worst   atomic.Int64
				mu      sync.Mutex
				failure error
				wg      sync.WaitGroup
			)
			start := time.Now()
			for range concurrency {
				wg.Go(func() {
					for i := next.Add(1); i <= calls; i = next.Add(1) {
						ctx, cancel := context.WithTimeout(t.Context(), deadline)
						began := time.Now()
						_, err := c.Lock(ctx, fmt.Sprint("abuse-", i%64))
						took := time.Since(began)
						cancel()
						for w := worst.Load(); int64(took) > w && !worst.CompareAndSwap(w, int64(took)); w = worst.Load() {
						}
						var why error
						switch {
						case !errors.Is(err, redlock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded):
							why = fmt.Errorf("Lock error = %v, want ErrNotObtained and DeadlineExceeded", err)
						case took > deadline+nodeTimeout+slack:
							why = fmt.Errorf("Lock with a %v deadline took %v", deadline, took)
						}
						if why != nil {
							mu.Lock()
							failure = errors.Join(failure, why)
							mu.Unlock()
							return
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d Lock calls, %d at a time, in %v; the slowest took %v (deadline %v, node timeout %v, slack %v)",
				calls, concurrency, time.Since(start), time.Duration(worst.Load()), deadline, nodeTimeout, slack)
			require.NoError(t, failure)
			for i, s := range live {
				n := connections(t, s) - base[i]
				t.Logf("%s: %d connections after the calls", s.Addr(), n)
				// Bounded by the pools (go-redis' and redigo's: 64 on
				// this machine), not by the number of calls.
				require.LessOrEqual(t, n, maxConns, "connections on %s after %d calls", s.Addr(), calls)
			}
			closed = true
			require.NoError(t, c.Close())
			for i, s := range live {
				require.Eventually(t, func() bool { return connections(t, s) == base[i] }, 5*time.Second, 10*time.Millisecond,
					"connections left on %s after the client closed", s.Addr())
			}
			// Up to 5s for the clients' goroutines to wind down: go-redis's
			// pool, after failed dials, redials in the background once a
			// second until it finds itself closed.
			for deadline := time.Now().Add(5 * time.Second); ; {
				err := goleak.Find(ignore)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("goroutines left 5s after the client closed: %v", err)
				}
			}
		})
	}
}
