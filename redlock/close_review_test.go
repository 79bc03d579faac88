package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// stopObserver watches its Client (ClientObserver); its stop function
// panics when panics is set, and counts its calls.
type stopObserver struct {
	redlock.NopObserver
	panics  bool
	stopped int
}

func (o *stopObserver) ObserveClient(*redlock.Client) func() {
	return func() {
		o.stopped++
		if o.panics {
			panic("broken stop")
		}
	}
}

// A ClientObserver's stop function that panics does not leave the Client
// half closed: Close still stops the other observers, ends the extensions
// (a running Do's fn is canceled with ErrLockLost), and closes every node;
// then the panic goes on to Close's caller.
func TestCloseStopPanicStillCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		broken, other := &stopObserver{panics: true}, &stopObserver{}
		const ttl = time.Second
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithObserver(broken), redlock.WithObserver(other))
		require.NoError(t, err)
		holding := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			result <- c.Do(context.Background(), "k", func(ctx context.Context) error {
				close(holding)
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(10 * ttl):
					return errors.New("fn's context was not canceled 10 TTLs after Close")
				}
			})
		}()
		<-holding
		var pv any
		func() {
			defer func() { pv = recover() }()
			c.Close()
		}()
		assert.Equal(t, "broken stop", pv, "the stop's panic goes on to Close's caller")
		assert.Equal(t, 1, other.stopped, "the other observer is stopped")
		require.ErrorIs(t, <-result, redlock.ErrLockLost, "Do's fn canceled by Close")
		for i, m := range mem {
			_, err := m.SetNX(context.Background(), "x", "v", ttl)
			assert.ErrorIs(t, err, driver.ErrClosed, "node %d closed by Close", i)
		}
		require.ErrorIs(t, c.Close(), nil)
		_, err = c.TryLock(context.Background(), "k2")
		require.ErrorIs(t, err, redlock.ErrClosed)
	})
}

// panicWatch is a ClientObserver whose ObserveClient panics.
type panicWatch struct{ redlock.NopObserver }

func (panicWatch) ObserveClient(*redlock.Client) func() { panic("broken ObserveClient") }

// When an observer's ObserveClient panics in New, the observers that were
// given the Client before it are stopped: no Client is returned, so no Close
// would ever stop them.
func TestNewObserveClientPanicStopsEarlierObservers(t *testing.T) {
	_, nodes := memNodes(3)
	first := &stopObserver{}
	assert.PanicsWithValue(t, "broken ObserveClient", func() {
		_, _ = redlock.New(nodes, redlock.WithObserver(first), redlock.WithObserver(panicWatch{}))
	})
	assert.Equal(t, 1, first.stopped, "the observer given the Client before the panic is stopped")
}
