package redlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestTokenFromNestedDo runs a Do inside another's fn, on real servers,
// through every driver: TokenFrom in the inner fn's context gives the inner
// lock's token, or none when the inner Do's Client has no WithFencing ("0
// and false ... for fn's context when the Client was made without
// WithFencing"), never the outer lock's, which a resource would take as
// the inner lock's. The inner fn's context is made from the outer fn's, and
// it reported the outer token (4 of 4 drivers).
func TestTokenFromNestedDo(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, d := range redisDrivers {
		t.Run(d, func(t *testing.T) {
			fenced := openRedis(t, d, servers, redlock.WithFencing(), redlock.WithNodeTimeout(liveNodeTimeout))
			plain := openRedis(t, d, servers, redlock.WithNodeTimeout(liveNodeTimeout))
			outer, inner := "outer-"+d, "inner-"+d
			for range 2 { // the inner key's counter ahead of the outer's
				l, err := fenced.TryLock(t.Context(), inner)
				require.NoError(t, err)
				require.NoError(t, l.Unlock(t.Context()))
			}
			require.NoError(t, fenced.Do(t.Context(), outer, func(ctx context.Context) error {
				tok, ok := redlock.TokenFrom(ctx)
				require.True(t, ok)
				require.NoError(t, plain.Do(ctx, inner, func(ctx context.Context) error {
					got, ok := redlock.TokenFrom(ctx)
					assert.False(t, ok, "TokenFrom in the fn of a Do without WithFencing, inside a fenced Do's fn (outer token %d)", tok)
					assert.Zero(t, got)
					return nil
				}))
				again, ok := redlock.TokenFrom(ctx)
				assert.True(t, ok)
				assert.Equal(t, tok, again, "the outer fn's token, after the inner Do")
				require.NoError(t, fenced.Do(ctx, inner, func(ctx context.Context) error {
					got, ok := redlock.TokenFrom(ctx)
					assert.True(t, ok)
					assert.Greater(t, got, tok, "the inner lock's own token, whose counter is ahead")
					return nil
				}))
				return nil
			}))
			require.NoError(t, plain.Do(t.Context(), outer, func(ctx context.Context) error {
				return fenced.Do(ctx, inner, func(ctx context.Context) error {
					got, ok := redlock.TokenFrom(ctx)
					assert.True(t, ok, "a fenced Do inside an unfenced one")
					assert.NotZero(t, got)
					return nil
				})
			}))
		})
	}
}
