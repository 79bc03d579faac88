package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// TestReviewEndedContextJoinedByTTLAndBadExtend: a context that had ended is
// in every error of Lock.TTL (after Unlock, after Until, as when the nodes
// are asked) and of an Extend with a TTL out of range, as it is in every
// other error of Extend and of TryLock's bad input. Before, TTL after Unlock
// or after Until returned ErrLockLost without it, and Extend(ctx, 0) only
// "TTL 0s is not positive".
//
// It runs in a bubble (testing/synctest): on the real clock its node timeout
// of 20ms (below the 50ms TTL of the second lock) failed the TryLocks on a
// loaded machine.
func TestReviewEndedContextJoinedByTTLAndBadExtend(t *testing.T) {
	synctest.Test(t, endedContextJoinedByTTLAndBadExtend)
}

func endedContextJoinedByTTLAndBadExtend(t *testing.T) {
	_, nodes := memNodes(3)
	c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(20*time.Millisecond))
	ended, cancel := context.WithCancel(t.Context())
	cancel()

	l, err := c.TryLock(t.Context(), "live")
	require.NoError(t, err)
	for _, ttl := range []time.Duration{0, -time.Second, time.Millisecond, redlock.MaxTTL + 1} {
		err := l.Extend(ended, ttl)
		require.Error(t, err)
		require.NotErrorIs(t, err, redlock.ErrLockLost, "bad input, the lock still held")
		require.ErrorIs(t, err, context.Canceled, "Extend(ended ctx, %v)", ttl)
	}
	require.False(t, errors.Is(l.Extend(t.Context(), 0), context.Canceled))
	require.NoError(t, l.Unlock(t.Context()))
	_, err = l.TTL(ended)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked)
	require.ErrorIs(t, err, context.Canceled, "TTL(ended ctx) after Unlock")

	l, err = c.TryLock(t.Context(), "expired", redlock.WithTTL(50*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(time.Until(l.Until()) + time.Millisecond)
	_, err = l.TTL(ended)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorIs(t, err, context.Canceled, "TTL(ended ctx) after Until")
	_, err = l.TTL(t.Context())
	require.NotErrorIs(t, err, context.Canceled, "a live context is not joined")
}

// TestReviewEndedContextJoinedToBadCallInput: TryLock, Lock and Do join a
// context that had ended to their errors for bad input of every kind, as
// they do for a bad key or a closed Client: a nil or zero Client, an option
// the call does not take (or a bad value), Do's nil function. Before, those
// errors came without ctx.Err().
func TestReviewEndedContextJoinedToBadCallInput(t *testing.T) {
	_, nodes := memNodes(3)
	c := newClient(t, nodes)
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	fn := func(context.Context) error { return nil }
	var zero redlock.Client
	for name, call := range map[string]func(*redlock.Client, context.Context) error{
		"TryLock": func(c *redlock.Client, ctx context.Context) error {
			_, err := c.TryLock(ctx, "k", redlock.WithKeyPrefix("p:"))
			return err
		},
		"Lock": func(c *redlock.Client, ctx context.Context) error {
			_, err := c.Lock(ctx, "k", redlock.WithMaxAttempts(0))
			return err
		},
		"Do": func(c *redlock.Client, ctx context.Context) error {
			return c.Do(ctx, "k", fn, redlock.WithFencing())
		},
		"Do(nil fn)": func(c *redlock.Client, ctx context.Context) error {
			return c.Do(ctx, "k", nil)
		},
	} {
		for _, cl := range []*redlock.Client{c, &zero, nil} {
			err := call(cl, ended)
			require.Error(t, err, "%s on %v", name, cl)
			require.NotErrorIs(t, err, redlock.ErrNotObtained, "%s on %v: bad input", name, cl)
			require.ErrorIs(t, err, context.Canceled, "%s(ended ctx) on %v: %v", name, cl, err)
			require.NotErrorIs(t, call(cl, t.Context()), context.Canceled, "%s on %v: a live context is not joined", name, cl)
		}
	}
}

// TestReviewEndedContextJoinedByNilLock: the methods of a nil or zero Lock
// that take a context join it to their error when it had ended, as a held
// Lock's do.
func TestReviewEndedContextJoinedByNilLock(t *testing.T) {
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for _, l := range []*redlock.Lock{nil, {}} {
		_, err := l.TTL(ended)
		for name, err := range map[string]error{"Extend": l.Extend(ended, time.Second), "Unlock": l.Unlock(ended), "TTL": err} {
			require.Error(t, err, name)
			require.ErrorIs(t, err, context.Canceled, "%s(ended ctx) of %v", name, l)
		}
		require.NotErrorIs(t, l.Unlock(t.Context()), context.Canceled)
	}
}
