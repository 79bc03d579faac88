package safety_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// fencedResource checks fencing tokens: it rejects a write whose token is
// lower than the highest it has accepted.
type fencedResource struct {
	mu      sync.Mutex
	highest uint64
	writes  []write
}

// Write records w if token is not older than every token seen, and rejects
// it otherwise.
func (r *fencedResource) Write(token uint64, holder, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		return fmt.Errorf("token %d of %s is older than %d: rejected", token, holder, r.highest)
	}
	r.highest = token
	r.writes = append(r.writes, write{holder, value, time.Now()})
	return nil
}

// Scenario 7 with fencing: the same paused holder, but the clients use
// WithFencing and the resource checks the tokens. A's late write carries an
// older token than B's and is rejected: the resource is safe although the
// holder paused past its validity.
func TestScenario07FencedPausedHolderLateWriteRejected(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ns := startNodes(t, 5)
			key := "fenced-paused-holder"
			res := &fencedResource{}
			opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithNodeTimeout(500 * time.Millisecond), redlock.WithFencing()}
			a := open(t, d, ns.addrs(), opts...)
			b := open(t, d, ns.addrs(), opts...)
			warm(t, a)
			warm(t, b)

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			la, err := a.Lock(ctx, key)
			require.NoError(t, err)
			require.NoError(t, res.Write(la.Token(), "A", "a1"))

			bHolds := make(chan *redlock.Lock, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*ttl)
				defer cancel()
				lb, err := b.Lock(ctx, key) // succeeds once A's keys expire
				if err == nil {
					err = res.Write(lb.Token(), "B", "b1")
				}
				if err != nil {
					t.Error(err)
					close(bHolds)
					return
				}
				bHolds <- lb
			}()

			lb, ok := <-bHolds // A is paused until B holds the lock
			require.True(t, ok, "B must get the lock after A's expired")
			require.True(t, time.Now().After(la.Until()), "A wakes after its validity ended")
			require.Greater(t, lb.Token(), la.Token(), "B's grant has a higher token")

			err = res.Write(la.Token(), "A", "a2")
			require.ErrorContains(t, err, "rejected", "the resource must reject the stale holder's write")
			require.Len(t, res.writes, 2)
			require.Equal(t, "b1", res.writes[1].value, "B's write stands")
			measured(t, "fenced paused holder, %s: A's token %d, B's %d; A's late write rejected", d, la.Token(), lb.Token())

			require.ErrorIs(t, la.Unlock(t.Context()), redlock.ErrLockLost)
			require.NoError(t, lb.Unlock(t.Context()))
		})
	}
}
