package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A nil or zero Client or Lock answers with an error, not a panic.
func TestUnmadeValues(t *testing.T) {
	ctx := t.Context()
	for name, c := range map[string]*redlock.Client{"nil": nil, "zero": new(redlock.Client)} {
		t.Run(name+" Client", func(t *testing.T) {
			_, err := c.TryLock(ctx, "k")
			assert.ErrorContains(t, err, "make one with New or Open")
			_, err = c.Lock(ctx, "k")
			assert.Error(t, err)
			assert.Error(t, c.Do(ctx, "k", func(context.Context) error { return nil }))
			assert.Error(t, c.Close())
			assert.Empty(t, c.Queues())
			assert.Zero(t, c.Quorum())
			assert.Zero(t, c.TTL())
			assert.Zero(t, c.NodeTimeout())
			assert.Equal(t, "redlock.Client(nil)", c.String())
		})
	}
	for name, l := range map[string]*redlock.Lock{"nil": nil, "zero": new(redlock.Lock)} {
		t.Run(name+" Lock", func(t *testing.T) {
			assert.Error(t, l.Unlock(ctx))
			assert.Error(t, l.Extend(ctx, time.Second))
			_, err := l.TTL(ctx)
			assert.Error(t, err)
			select {
			case <-l.Done():
			default:
				t.Error("the Done of a Lock never obtained is closed")
			}
			assert.Zero(t, l.Token())
			assert.Empty(t, l.Key())
			assert.NotPanics(t, func() { _ = l.String() })
		})
	}
}

// shared is a node type that is comparable, holding values that may not be.
type shared struct{ driver.Node }

// tagged holds a slice: a value of it cannot be compared.
type tagged struct {
	*memory.Node
	tags []string
}

// wrapped is a driver's node type whose zero value is not usable (its
// String panics): it wraps a node its driver makes.
type wrapped struct{ *memory.Node }

// Nodes that New cannot use are refused with an error that says which and
// why: the zero value of a driver's node (one that is not usable), a nil map
// or func node, nodes of a comparable type whose values cannot be compared
// (they are not the same). The zero memory.Node is usable (see its doc), and
// taken.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestNewOddNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := redlock.New([]driver.Node{memory.New(), wrapped{}, memory.New()})
		assert.ErrorContains(t, err, "node 2")

		c, err := redlock.New([]driver.Node{memory.New(), new(memory.Node), memory.New()})
		require.NoError(t, err, "a zero memory.Node")
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		require.NoError(t, c.Close())

		c, err = redlock.New([]driver.Node{shared{tagged{memory.New(), nil}}, shared{tagged{memory.New(), nil}}, shared{tagged{memory.New(), nil}}})
		require.NoError(t, err, "three nodes of a type whose values cannot be compared")
		require.NoError(t, c.Close())
	})
}

// WithTLSConfig(nil) is an error, not a connection without TLS.
func TestWithTLSConfigNil(t *testing.T) {
	_, err := redlock.Open("memory", []string{"tls-nil-1", "tls-nil-2", "tls-nil-3"}, redlock.WithTLSConfig(nil))
	assert.ErrorContains(t, err, "WithTLSConfig(nil)")
	_, err = redlock.New([]driver.Node{memory.New()}, redlock.WithTLSConfig(nil))
	assert.ErrorContains(t, err, "WithTLSConfig(nil)")
}

// nilOpener is a driver that returns no node and no error for "bad", and
// counts the nodes it opened that are still open.
type nilOpener struct{ open *atomic.Int32 }

func (d nilOpener) Open(addr string) (driver.Node, error) {
	if addr == "bad" {
		return nil, nil
	}
	d.open.Add(1)
	return &countedNode{Node: memory.New(), open: d.open}, nil
}

type countedNode struct {
	*memory.Node
	open *atomic.Int32
}

func (n *countedNode) Close() error {
	n.open.Add(-1)
	return n.Node.Close()
}

// opened counts the nodes of the driver "test-nil-opener" still open;
// registered once, however often the tests run (-count).
var (
	opened       atomic.Int32
	registerOnce sync.Once
)

func registerNilOpener() {
	registerOnce.Do(func() { redlock.Register("test-nil-opener", nilOpener{&opened}) })
}

// A driver whose Open returns neither a node nor an error gets an error
// from redlock.Open, which closes the nodes it opened before.
func TestOpenDriverReturnsNilNode(t *testing.T) {
	registerNilOpener()
	_, err := redlock.Open("test-nil-opener", []string{"a", "bad", "c"})
	assert.ErrorContains(t, err, "address 2")
	assert.ErrorContains(t, err, "nil node")
	assert.Zero(t, opened.Load(), "the nodes opened before are closed")
}

// panicBackoff panics when Lock would wait.
func panicBackoff(int) time.Duration { panic("broken backoff") }

// A Lock, or a Do's, whose Backoff panics has its end reported to the
// observers before the panic goes on.
func TestLockEndWhenBackoffPanics(t *testing.T) {
	for _, name := range []string{"Lock", "Do"} {
		t.Run(name, func(t *testing.T) {
			_, nodes := memNodes(3)
			r := &recorder{id: "r"}
			// liveNodeTimeout: with the default 200ms, on the real
			// clock, the first TryLock failed on a loaded machine.
			c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithNodeTimeout(liveNodeTimeout))
			held, err := c.TryLock(t.Context(), "k")
			require.NoError(t, err)
			defer held.Unlock(t.Context())
			var pv any
			func() {
				defer func() { pv = recover() }()
				if name == "Lock" {
					_, _ = c.Lock(t.Context(), "k", redlock.WithBackoff(panicBackoff))
				} else {
					_ = c.Do(t.Context(), "k", func(context.Context) error { return nil }, redlock.WithBackoff(panicBackoff))
				}
			}()
			assert.Equal(t, "broken backoff", pv)
			assert.Equal(t, r.count("start /lock")+r.count("start /do/lock"), r.count("end /lock")+r.count("end /do/lock"), "every Lock's end: %v", r.snapshot())
			assert.Equal(t, r.count("start /do"), r.count("end /do"), "every Do's end: %v", r.snapshot())
			r.mu.Lock()
			defer r.mu.Unlock()
			require.NotEmpty(t, r.locks)
			assert.Error(t, r.locks[len(r.locks)-1].Err)
		})
	}
}

// panicObserveClient is an observer that panics when given its Client.
type panicObserveClient struct{ redlock.NopObserver }

func (panicObserveClient) ObserveClient(*redlock.Client) func() { panic("broken ObserveClient") }

// Open closes the nodes it opened when an observer's ObserveClient panics,
// and the panic goes on.
func TestOpenObserveClientPanicClosesNodes(t *testing.T) {
	registerNilOpener()
	assert.PanicsWithValue(t, "broken ObserveClient", func() {
		_, _ = redlock.Open("test-nil-opener", []string{"a", "b", "c"}, redlock.WithObserver(panicObserveClient{}))
	})
	assert.Zero(t, opened.Load(), "the nodes opened are closed")
}
