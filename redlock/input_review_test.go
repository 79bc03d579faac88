package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A nil context is bad input: the calls that take one return an error, and
// never panic (they dereferenced it).
func TestReviewNilContextIsAnError(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testNilContext(t) })
	// With an observer, the observers must not be handed the nil context
	// before the call checks it.
	t.Run("observed", func(t *testing.T) { testNilContext(t, redlock.WithObserver(redlock.NopObserver{})) })
}

func testNilContext(t *testing.T, opts ...redlock.Option) {
	_, nodes := memNodes(3)
	c := newClient(t, nodes, opts...)
	var nilCtx context.Context
	_, err := c.TryLock(nilCtx, "k")
	require.ErrorContains(t, err, "nil context")
	_, err = c.Lock(nilCtx, "k")
	require.ErrorContains(t, err, "nil context")
	ran := false
	err = c.Do(nilCtx, "k", func(context.Context) error { ran = true; return nil })
	require.ErrorContains(t, err, "nil context")
	require.False(t, ran, "fn runs only with the lock")
	l, err := c.TryLock(t.Context(), "k")
	require.NoError(t, err)
	require.ErrorContains(t, l.Extend(nilCtx, time.Second), "nil context")
	require.ErrorContains(t, l.Unlock(nilCtx), "nil context")
	require.NoError(t, l.Unlock(t.Context()), "the lock is still held after Unlock(nil)")
}
