package redlock_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// startObserver runs do in the first start of an extension of key "x" it is
// told of, on the keeper's goroutine.
type startObserver struct {
	redlock.NopObserver
	do   func()
	once sync.Once
	in   chan struct{} // closed once do has begun
}

func (o *startObserver) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	if e.Key == "x" {
		o.once.Do(func() {
			close(o.in)
			o.do()
		})
	}
	return ctx, nil
}

// An Extend start of Do's extension that panics, calls runtime.Goexit, or
// calls back into the Client (a Do of another key, whose function returns
// at once, so that its lock is added to and removed from the keeper while
// x's extension starts) holds no Do: x's Do returns once its function does,
// and Close returns. kept.state's starting bit is cleared, and a remove
// waiting on it woken, however the start ends (15f02dd).
func TestKeeperStartObserverEndsHoldNoDo(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(c **redlock.Client) func()
	}{
		{"panics", func(**redlock.Client) func() { return func() { panic("observer") } }},
		{"Goexit", func(**redlock.Client) func() { return runtime.Goexit }},
		{"Do of another key", func(c **redlock.Client) func() {
			return func() {
				if err := (*c).Do(context.Background(), "y", func(context.Context) error { return nil }); err != nil {
					panic(err)
				}
			}
		}},
		{"TryLock of its key", func(c **redlock.Client) func() {
			return func() {
				if l, err := (*c).TryLock(context.Background(), "x"); err == nil {
					panic("x granted twice: " + l.Key())
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var c *redlock.Client
				o := &startObserver{do: tc.do(&c), in: make(chan struct{})}
				_, nodes := memNodes(3)
				var err error
				c, err = redlock.New(nodes, redlock.WithTTL(10*time.Second), redlock.WithExtendInterval(time.Second), redlock.WithObserver(o))
				require.NoError(t, err)
				ret := make(chan struct{})
				done := make(chan error, 1)
				go func() {
					done <- c.Do(t.Context(), "x", func(context.Context) error {
						<-ret
						return nil
					})
				}()
				<-o.in
				synctest.Wait()
				close(ret)
				require.NoError(t, <-done)
				require.NoError(t, c.Close())
			})
		})
	}
}
