package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// queueNode is a memory node that reports a local queue (driver.Queuer), as
// the Redis drivers' nodes do.
type queueNode struct {
	*memory.Node
	p driver.Pending
}

func (n queueNode) Pending() driver.Pending { return n.p }

// watchObserver records the Client it watches and how often it was stopped.
type watchObserver struct {
	redlock.NopObserver
	got     *redlock.Client
	stopped int
}

func (o *watchObserver) ObserveClient(c *redlock.Client) func() {
	o.got = c
	return func() { o.stopped++ }
}

// Queues reports the queues of the nodes that queue, in the nodes' order and
// named as in NodeError; the other nodes are left out.
func TestQueues(t *testing.T) {
	mem, _ := memNodes(3)
	nodes := []driver.Node{queueNode{mem[0], driver.Pending{Depth: 3, Oldest: time.Second}}, mem[1], queueNode{mem[2], driver.Pending{}}}
	c := newClient(t, nodes)
	assert.Equal(t, []redlock.NodeQueue{
		{Node: mem[0].String(), Pending: driver.Pending{Depth: 3, Oldest: time.Second}},
		{Node: mem[2].String()},
	}, c.Queues())
	require.NoError(t, c.Close())
	assert.Len(t, c.Queues(), 2, "also after Close")

	_, plain := memNodes(3)
	assert.Empty(t, newClient(t, plain).Queues(), "memory nodes do not queue")
}

// An observer that watches its Client (ClientObserver) is given it by New,
// once, and stopped by Close, once, before the nodes close; a plain
// Observer beside it is not asked.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestClientObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		o := &watchObserver{}
		c, err := redlock.New(nodes, redlock.WithObserver(o), redlock.WithObserver(redlock.NopObserver{}))
		require.NoError(t, err)
		assert.Same(t, c, o.got)
		assert.Zero(t, o.stopped)
		l, err := c.TryLock(context.Background(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(context.Background()))
		require.NoError(t, c.Close())
		require.NoError(t, c.Close())
		assert.Equal(t, 1, o.stopped, "stopped once, by the first Close")
	})
}
