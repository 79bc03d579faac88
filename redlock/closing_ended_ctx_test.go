package redlock_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// cancelOnClose is a ClientObserver whose stop, which Close calls just after
// it wakes the waiters, ends a context; it first records in early whether
// result already holds the waiter's error.
type cancelOnClose struct {
	redlock.NopObserver
	cancel context.CancelFunc
	result chan error
	early  *bool
}

func (o cancelOnClose) ObserveClient(*redlock.Client) func() {
	return func() {
		*o.early = len(o.result) > 0
		o.cancel()
	}
}

// A Lock that waits for a held key when Close begins and its context ends
// together returns an error matching ctx.Err() as well as ErrClosed: every
// call's error includes ctx.Err() once its context ended. The waits chose at
// random between the two, and Close's way left ctx.Err() out. With one P,
// the waiter runs only once Close has ended the context too (Close's
// goroutine does not yield between the two), so that each wait sees both;
// but on a loaded machine the runtime can preempt that goroutine in
// between, and the waiter then returns before the context ended, rightly
// without ctx.Err() (3 runs of 4,000 at nice 19 beside four CPU-spinning
// processes failed so): a waiter whose error was sent before the context
// ended is held to ErrClosed alone.
// Both waits are tried: the waiter alone (lockWait), and a waiter with a cap
// behind another of its Client (takeTurn).
func TestLockEndedContextAndCloseAtOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for name, opts := range map[string][]redlock.Option{
		"alone":  nil,
		"queued": {redlock.WithMaxAttempts(1 << 20), redlock.WithBackoff(redlock.ConstantBackoff(time.Hour))},
	} {
		for range 20 {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				_, nodes := memNodes(3)
				result := make(chan error, 1)
				early := false
				c, err := redlock.New(nodes, redlock.WithTTL(time.Minute),
					redlock.WithObserver(cancelOnClose{cancel: cancel, result: result, early: &early}))
				require.NoError(t, err)
				_, err = c.TryLock(context.Background(), "k")
				require.NoError(t, err)
				if opts != nil { // another waiter has the key's turn
					go func() { _, _ = c.Lock(context.Background(), "k") }()
					synctest.Wait()
				}
				go func() {
					_, err := c.Lock(ctx, "k", opts...)
					result <- err
				}()
				synctest.Wait() // it waits: for the turn, or for a release
				require.NoError(t, c.Close())
				err = <-result
				require.ErrorIs(t, err, redlock.ErrNotObtained, name)
				if early {
					require.ErrorIs(t, err, redlock.ErrClosed, "%s: returned before the context ended", name)
					return
				}
				require.ErrorIs(t, err, context.Canceled, "%s: the context had ended", name)
			})
		}
	}
}
