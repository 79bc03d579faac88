package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// closeAtAttempt is an Observer that begins the Client's Close as attempt
// at of a waiter starts, and returns once Close has begun: the attempt then
// finds the Client closed, as one does whose wait ended (its Backoff, or a
// release's notice) an instant before Close began.
type closeAtAttempt struct {
	redlock.NopObserver
	at     int
	c      **redlock.Client
	once   sync.Once
	closed chan error
}

func (o *closeAtAttempt) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	if e.Attempt == o.at && ctx.Value(closeHere{}) != nil {
		o.once.Do(func() {
			c := *o.c
			go func() { o.closed <- c.Close() }()
			// Close marks the Client closed before it waits for
			// anything; the sleep lets it run that far.
			time.Sleep(time.Millisecond)
		})
	}
	return ctx, nil
}

// closeHere marks the context of the waiter whose attempt closeAtAttempt
// waits for.
type closeHere struct{}

// A Lock (and Do) that waits for a held key and whose next attempt finds the
// Client closed, Close having begun between the end of its wait and that
// attempt, returns what it returns when Close begins during its wait: an
// error matching ErrClosed with the last attempt's error (ErrNotObtained)
// joined in, as Lock's doc says ("It stops too when Close begins while it
// waits between attempts: the error then matches ErrClosed, with the last
// attempt's error joined in"). It returned the attempt's bad-input error
// alone (ErrClosed), which does not match ErrNotObtained: whether a caller's
// errors.Is(err, ErrNotObtained) held depended on which of the two moments
// Close fell at.
func TestCloseJustBeforeAWaitersAttempt(t *testing.T) {
	for _, name := range []string{"Lock", "Lock capped, behind another waiter", "Do"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, nodes := memNodes(3)
				var c *redlock.Client
				obs := &closeAtAttempt{at: 3, c: &c, closed: make(chan error, 1)}
				var err error
				c, err = redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithObserver(obs),
					redlock.WithBackoff(redlock.ConstantBackoff(100*time.Millisecond)))
				require.NoError(t, err)
				other, err := redlock.New(nodes, redlock.WithTTL(time.Minute))
				require.NoError(t, err)
				defer other.Close()
				_, err = other.TryLock(context.Background(), "k")
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.WithValue(context.Background(), closeHere{}, true))
				defer cancel()
				switch name {
				case "Lock":
					_, err = c.Lock(ctx, "k")
				case "Lock capped, behind another waiter":
					obs.at = 2                                               // its second attempt, on its Backoff while it waits for the turn
					go func() { _, _ = c.Lock(context.Background(), "k") }() // has the key's turn
					synctest.Wait()
					_, err = c.Lock(ctx, "k", redlock.WithMaxAttempts(100))
				case "Do":
					err = c.Do(ctx, "k", func(context.Context) error { return nil })
				}
				require.ErrorIs(t, err, redlock.ErrClosed)
				require.ErrorIs(t, err, redlock.ErrNotObtained, "the last attempt's error is joined in: %v", err)
				var ve *redlock.VoteError
				require.True(t, errors.As(err, &ve), "the last attempt's votes: %v", err)
				require.NoError(t, <-obs.closed)
			})
		})
	}
}
