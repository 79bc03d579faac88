package redlock_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// grantTokens records the fencing token of every granted attempt.
type grantTokens struct {
	redlock.NopObserver
	mu   sync.Mutex
	seen []uint64
}

func (o *grantTokens) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	return ctx, func(d redlock.AttemptDone) {
		if d.Err == nil {
			o.mu.Lock()
			o.seen = append(o.seen, d.Token)
			o.mu.Unlock()
		}
	}
}

func (o *grantTokens) tokens() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]uint64(nil), o.seen...)
}

// Do gives fn its lock's fencing token through fn's context (TokenFrom): the
// token the grant drew, the same after Do's extensions, rising from one Do
// to the next, found through a context made from fn's too; and none without
// WithFencing or outside Do. In a bubble: fn outlasts three extensions on
// the bubble's clock.
func TestTokenFromDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		var tokens []uint64
		obs := &grantTokens{}
		c := newClient(t, nodes, redlock.WithFencing(), redlock.WithTTL(3*time.Second), redlock.WithObserver(obs))
		for range 2 {
			require.NoError(t, c.Do(t.Context(), "k", func(ctx context.Context) error {
				tok, ok := redlock.TokenFrom(ctx)
				require.True(t, ok, "TokenFrom(fn's context) with WithFencing")
				time.Sleep(3500 * time.Millisecond) // past the TTL: Do extends (every 1s)
				require.NoError(t, ctx.Err(), "the lock, extended")
				derived, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				again, ok := redlock.TokenFrom(derived)
				require.True(t, ok, "TokenFrom(a context made from fn's)")
				assert.Equal(t, tok, again, "the token after Do's extensions")
				tokens = append(tokens, tok)
				return nil
			}))
		}
		require.Equal(t, obs.tokens(), tokens, "the tokens fn read, against those the grants drew (AttemptDone)")
		assert.Less(t, tokens[0], tokens[1], "tokens rise from one Do to the next")

		plain := newClient(t, nodes)
		require.NoError(t, plain.Do(t.Context(), "k", func(ctx context.Context) error {
			tok, ok := redlock.TokenFrom(ctx)
			assert.False(t, ok, "TokenFrom without WithFencing")
			assert.Zero(t, tok)
			return nil
		}))
		tok, ok := redlock.TokenFrom(t.Context())
		assert.False(t, ok, "TokenFrom outside Do")
		assert.Zero(t, tok)
		var none context.Context // a nil context: no token, no panic
		tok, ok = redlock.TokenFrom(none)
		assert.False(t, ok, "TokenFrom(nil)")
		assert.Zero(t, tok)
	})
}
