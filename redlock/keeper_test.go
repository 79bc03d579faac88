package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// Many locks held at once through Do are all kept, by the Client's one
// scheduler, over several extension periods, and released at the end; a
// lock lost on the nodes is noticed by its Do alone.
func TestDoKeepsManyLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		const (
			ttl   = time.Second
			locks = 300
		)
		c := newClient(t, nodes, redlock.WithTTL(ttl))
		var (
			wg      sync.WaitGroup
			holding sync.WaitGroup
			release = make(chan struct{})
			errs    = make(chan error, locks)
		)
		holding.Add(locks)
		for i := range locks {
			key := fmt.Sprintf("k%d", i)
			wg.Go(func() {
				errs <- c.Do(t.Context(), key, func(ctx context.Context) error {
					holding.Done()
					select {
					case <-release:
						return nil
					case <-ctx.Done():
						return fmt.Errorf("%s: lost while held: %w", key, context.Cause(ctx))
					}
				})
			})
		}
		holding.Wait()
		// Lose one lock on a majority of the nodes: only its Do notices.
		for _, m := range mem[:3] {
			m.Delete("k7")
		}
		time.Sleep(4 * ttl) // twelve extension periods
		for i := range locks {
			key := fmt.Sprintf("k%d", i)
			want := 5
			if i == 7 {
				want = 0 // its Do was canceled and released it
			}
			require.Equal(t, want, holders(mem, key), "%s is held by %d nodes after 4 TTLs, want %d", key, holders(mem, key), want)
		}
		close(release)
		wg.Wait()
		close(errs)
		lost := 0
		for err := range errs {
			if err != nil {
				require.ErrorIs(t, err, redlock.ErrLockLost)
				require.Contains(t, err.Error(), "k7:")
				lost++
			}
		}
		require.Equal(t, 1, lost, "only the lock deleted on the nodes is lost")
		synctest.Wait() // the releases beyond a quorum finish in the background
		for i := range locks {
			require.Zero(t, holders(mem, fmt.Sprintf("k%d", i)), "every lock is released when Do returns")
		}
	})
}
