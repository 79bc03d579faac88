package safety_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// TestDriversLateReplyNeverAnswersALaterCall: a reply that comes back after
// its call gave up must never be taken for the reply of a later call. A
// node of each driver, directly (no redlock.Client), sends SETs on free keys
// through a link that holds replies back longer than the calls wait; the
// server applies them and answers "OK", late. The delay is then lifted, the
// late replies flow, and the node at once asks, concurrently, SET NX of
// keys another client holds, releases and extensions of keys with another
// value: every answer must be "no". A driver that read a late "OK" (or a
// late 1 of a script) as the answer to one of these would grant a lock held
// elsewhere. Through every driver, several rounds.
func TestDriversLateReplyNeverAnswersALaterCall(t *testing.T) {
	t.Parallel()
	const (
		callTimeout = 100 * time.Millisecond
		late        = 300 * time.Millisecond
		rounds      = 6
		burst       = 20
	)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			s := redistest.NewServer(t)
			p := faultproxy.NewProxy(t, s.Addr())
			n, err := driverOf[d].Open(p.Addr())
			require.NoError(t, err)
			t.Cleanup(func() { n.Close() })
			// Keys held by another client: no call of n may get them.
			for i := range burst {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				_, err := s.Do(ctx, "SET", "held-"+strconv.Itoa(i), "other", "PX", "600000")
				cancel()
				require.NoError(t, err)
			}
			// Warm: connections made.
			for i := range burst {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				_, err := n.SetNX(ctx, "warm-"+strconv.Itoa(i), "v", time.Minute)
				cancel()
				require.NoError(t, err)
			}
			var (
				mu         sync.Mutex
				violations []string
				timedOut   int
			)
			for r := range rounds {
				require.NoError(t, p.SetLatency(0, late))
				var wg sync.WaitGroup
				for i := range burst {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
						defer cancel()
						key := fmt.Sprintf("free-%d-%d", r, i)
						var err error
						switch i % 3 {
						case 0:
							_, err = n.SetNX(ctx, key, "mine", time.Minute)
						case 1: // a key n set before: its extension answers 1
							_, err = n.Extend(ctx, "warm-"+strconv.Itoa(i), "v", time.Minute)
						default:
							_, err = n.SetNX(ctx, key, "mine", time.Minute)
						}
						if err != nil {
							mu.Lock()
							timedOut++
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				require.NoError(t, p.SetLatency(0, 0)) // the late replies flow now
				for i := range burst {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
						defer cancel()
						key := "held-" + strconv.Itoa(i)
						var (
							ok  bool
							err error
							op  string
						)
						switch i % 3 {
						case 0:
							op = "SetNX"
							ok, err = n.SetNX(ctx, key, "mine", time.Minute)
						case 1:
							op = "Extend"
							ok, err = n.Extend(ctx, key, "mine", time.Minute)
						default:
							op = "EvalRelease"
							ok, err = n.EvalRelease(ctx, key, "mine")
						}
						if ok {
							mu.Lock()
							violations = append(violations, fmt.Sprintf("round %d: %s of %s, held by another, answered yes (err %v)", r, op, key, err))
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}
			measured(t, "%s: %d of %d calls gave up before their late replies; %d violations", d, timedOut, rounds*burst, len(violations))
			require.Empty(t, violations)
			// The held keys are intact.
			for i := range burst {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				v, err := s.Do(ctx, "GET", "held-"+strconv.Itoa(i))
				cancel()
				require.NoError(t, err)
				require.Equal(t, "other", v)
			}
		})
	}
}
