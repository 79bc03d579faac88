package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// extendsDone signals each Extend that succeeded.
type extendsDone struct {
	redlock.NopObserver
	ok chan<- struct{}
}

func (e extendsDone) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(d redlock.ExtendDone) {
		if d.Err == nil {
			select {
			case e.ok <- struct{}{}:
			default:
			}
		}
	}
}

// A Client whose node timeout leaves no room for Do's extensions, with a
// large drift factor, keeps Do's lock for three extensions: its default
// interval was TTL/3 (40s here), far past the validity (TTL - drift,
// 1.198s), so that every Do lost its lock one validity after its first
// extension (sent at once, the validity being shorter than the node
// timeout), however fast the servers answered. It is now half the validity.
func TestDoExtendsBeforeValidityWithLargeDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ok := make(chan struct{}, 1)
			c := openRedis(t, name, servers, redlock.WithTTL(2*time.Minute), redlock.WithDriftFactor(0.99),
				redlock.WithNodeTimeout(2*time.Second), redlock.WithObserver(extendsDone{ok: ok}))
			err := c.Do(t.Context(), "k", func(ctx context.Context) error {
				// The first extension goes at once (the validity is
				// shorter than the node timeout); the next ones
				// decide.
				for range 3 {
					select {
					case <-ok:
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}
				return nil
			})
			require.NoError(t, err, "Do's function was not extended before the validity ended")
		})
	}
}
