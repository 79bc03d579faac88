package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A Lock.TTL judged while an Extend is still in flight must lower Until to
// what its node reads guarantee at once, not at the Extend's judgement: until
// that Extend is judged, nothing says that its PEXPIREs landed, and the keys
// may expire on every node when the reads said. Here the keys live 500ms less
// than the lock counts on (set from outside), TTL reads them while an Extend
// is in flight, and the Extend's calls hang past the keys' expiry (a node
// timeout of 800ms) and then fail: after 73917aa, Until stayed ~400ms past
// the keys' expiry on every node, and Done open, until the Extend was judged,
// while another client could take the lock.
func TestTTLLowersUntilWhileAnExtendIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, _ := memNodes(3)
		extGate, open := make(chan struct{}), make(chan struct{})
		close(open)
		var set setValue
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = ttlGatedNode{Node: m, ttlGate: open, extGate: extGate, failExtend: true, set: &set}
		}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(800*time.Millisecond))
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		done := l.Done()
		time.Sleep(100 * time.Millisecond)
		expiry := shortenKeys(t, mem, l.Key(), &set, 500*time.Millisecond)
		extended := make(chan error, 1)
		go func() { extended <- l.Extend(ctx, time.Second) }()
		synctest.Wait() // the Extend waits for extGate
		left, err := l.TTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, left, 500*time.Millisecond)
		assert.False(t, l.Until().After(expiry), "Until %v is after the keys' expiry on the nodes (%v later) while the Extend is in flight", l.Until(), l.Until().Sub(expiry))
		time.Sleep(time.Until(expiry) + time.Millisecond)
		assert.Equal(t, 0, holders(mem, l.Key()))
		other := newClient(t, nodes)
		ol, err := other.TryLock(ctx, "k")
		require.NoError(t, err, "another client cannot take the lock once the keys expired")
		select {
		case <-done:
		default:
			t.Error("Done still open after every node's key expired and another client took the lock")
		}
		assert.False(t, l.Until().After(time.Now()), "Until %v still ahead while another client holds the lock", l.Until())
		close(extGate)
		require.Error(t, <-extended)
		require.NoError(t, ol.Unlock(ctx))
	})
}

// A TTL judged while an Extend is in flight lowers Until, and the Extend,
// when it succeeds before that Until, sets Until from its own start as ever:
// the lock is kept.
func TestTTLLoweredUntilRaisedByTheExtendInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, _ := memNodes(3)
		extGate, open := make(chan struct{}), make(chan struct{})
		close(open)
		var set setValue
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = ttlGatedNode{Node: m, ttlGate: open, extGate: extGate, set: &set}
		}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		done := l.Done()
		time.Sleep(100 * time.Millisecond)
		expiry := shortenKeys(t, mem, l.Key(), &set, 300*time.Millisecond) // the lock counts on ~890ms
		extended := make(chan error, 1)
		start := time.Now()
		go func() { extended <- l.Extend(ctx, time.Second) }()
		synctest.Wait() // the Extend waits for extGate
		left, err := l.TTL(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, left, 300*time.Millisecond)
		assert.False(t, l.Until().After(expiry), "Until %v is after the keys' expiry on the nodes (%v later) while the Extend is in flight", l.Until(), l.Until().Sub(expiry))
		time.Sleep(50 * time.Millisecond)
		close(extGate)
		require.NoError(t, <-extended)
		assert.True(t, l.Until().After(start.Add(900*time.Millisecond)), "the Extend that succeeded did not set Until from its start: %v", l.Until().Sub(start))
		time.Sleep(time.Until(expiry) + time.Millisecond)
		select {
		case <-done:
			t.Fatal("Done closed: the lock was kept by the Extend")
		default:
		}
		assert.Equal(t, 3, holders(mem, "k"))
		require.NoError(t, l.Unlock(ctx))
	})
}
