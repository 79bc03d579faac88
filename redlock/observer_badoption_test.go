package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestObserverSeesBadCallOptions: a call given a bad option (a per-call TTL
// out of range, a Client-only option, one that means nothing for the method)
// is bad input, as an empty key is: its attempt is observed with the outcome
// OutcomeError (see Outcome), inside its Lock and Do as they are, and nothing
// is sent to the nodes. Before, such a call returned its error unobserved,
// while the same call with an empty key was an attempt of OutcomeError: a
// per-call option error did not reach redlockotel's acquire.duration nor the
// logger.
func TestObserverSeesBadCallOptions(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	rec := &recorder{id: "r"}
	c := openRedis(t, "goredis", servers, redlock.WithObserver(rec), redlock.WithNodeTimeout(liveNodeTimeout))
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		call func(context.Context) error
		log  []string
	}{
		{"TryLock with a negative TTL", func(ctx context.Context) error {
			_, err := c.TryLock(ctx, "k", redlock.WithTTL(-time.Second))
			return err
		}, []string{"start /attempt", "end /attempt"}},
		{"TryLock with a backoff", func(ctx context.Context) error {
			_, err := c.TryLock(ctx, "k", redlock.WithBackoff(redlock.DefaultBackoff))
			return err
		}, []string{"start /attempt", "end /attempt"}},
		{"Lock with a Client-only option", func(ctx context.Context) error {
			_, err := c.Lock(ctx, "k", redlock.WithFencing())
			return err
		}, []string{"start /lock", "start /lock/attempt", "end /lock/attempt", "end /lock"}},
		{"Lock with no attempts", func(ctx context.Context) error {
			_, err := c.Lock(ctx, "k", redlock.WithMaxAttempts(0))
			return err
		}, []string{"start /lock", "start /lock/attempt", "end /lock/attempt", "end /lock"}},
		{"Do with an impossible interval", func(ctx context.Context) error {
			return c.Do(ctx, "k", func(context.Context) error {
				t.Error("Do ran its function with a bad option")
				return nil
			}, redlock.WithTTL(time.Second), redlock.WithExtendInterval(time.Second))
		}, []string{"start /do", "start /do/lock", "start /do/lock/attempt", "end /do/lock/attempt", "end /do/lock", "end /do"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.snapshot())
			nodesBefore, _ := rec.nodeCalls()
			attemptsBefore := len(rec.attempts)
			err := tc.call(ctx)
			require.Error(t, err)
			assert.NotErrorIs(t, err, redlock.ErrNotObtained, "bad input is not a refusal")
			assert.Equal(t, tc.log, rec.snapshot()[before:])
			require.Len(t, rec.attempts, attemptsBefore+1)
			a := rec.attempts[attemptsBefore]
			assert.Equal(t, redlock.OutcomeError, a.Outcome)
			assert.Equal(t, "k", a.Key)
			assert.Equal(t, 1, a.Attempt)
			assert.Equal(t, redlock.Votes{}, a.Votes, "nothing sent")
			assert.Equal(t, err.Error(), a.Err.Error(), "the attempt's error is the call's")
			nodesAfter, _ := rec.nodeCalls()
			assert.Len(t, nodesAfter, len(nodesBefore), "no node call")
		})
	}
	require.Len(t, rec.dos, 1)
	assert.Error(t, rec.dos[0].Err)
	assert.Empty(t, rec.lockEnds())
	for _, l := range rec.locks {
		assert.Equal(t, 1, l.Attempts)
		assert.Error(t, l.Err)
	}
	for _, s := range servers {
		n, err := s.Do(ctx, "EXISTS", "k")
		require.NoError(t, err)
		assert.Equal(t, int64(0), n, "no key set")
	}
}

// TestBadCallOptionsSameErrorObserved: observers change nothing in the error
// of a call given a bad option, with a context that had ended and on a
// closed Client too: it names the option, with ctx.Err() joined, and never
// matches ErrNotObtained (the Do's attempt, observed, waits for no slot nor
// the context's verdict first).
func TestBadCallOptionsSameErrorObserved(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	plain := openRedis(t, "goredis", servers)
	observed := openRedis(t, "goredis", servers, redlock.WithObserver(&recorder{id: "r"}))
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	bad := redlock.WithTTL(-time.Second)
	fn := func(context.Context) error {
		t.Error("Do ran its function with a bad option")
		return nil
	}
	calls := map[string]func(*redlock.Client, context.Context) error{
		"TryLock": func(c *redlock.Client, ctx context.Context) error { _, err := c.TryLock(ctx, "k", bad); return err },
		"Lock":    func(c *redlock.Client, ctx context.Context) error { _, err := c.Lock(ctx, "k", bad); return err },
		"Do":      func(c *redlock.Client, ctx context.Context) error { return c.Do(ctx, "k", fn, bad) },
	}
	check := func(name string, ctx context.Context, call func(*redlock.Client, context.Context) error) {
		t.Helper()
		want, got := call(plain, ctx), call(observed, ctx)
		require.Error(t, want, name)
		require.Error(t, got, name)
		assert.Equal(t, want.Error(), got.Error(), name)
		assert.Contains(t, got.Error(), "TTL -1s is not positive", name)
		assert.NotErrorIs(t, got, redlock.ErrNotObtained, name)
		assert.Equal(t, errors.Is(want, context.Canceled), errors.Is(got, context.Canceled), name)
	}
	for name, call := range calls {
		check(name+" with an ended context", ended, call)
	}
	require.NoError(t, plain.Close())
	require.NoError(t, observed.Close())
	for name, call := range calls {
		check(name+" on a closed Client", t.Context(), call)
	}
}
