package redlock_test

import (
	"context"
	"fmt"
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

// oneTimeout is a memory node that counts the extensions it gets and, once
// armed, lets the first of them time out (it waits for its context to end,
// as a call whose reply came too late for a starved process to read it),
// answering the others as the memory node does.
type oneTimeout struct {
	*memory.Node
	armed   atomic.Bool
	extends atomic.Int64
}

func (n *oneTimeout) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.extends.Add(1)
	if n.armed.CompareAndSwap(true, false) {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// oneTimeoutNodes makes n memory nodes, each behind a oneTimeout, and that
// behind a batch.Batcher (see batchedNode) if queued.
func oneTimeoutNodes(n int, queued bool) ([]*memory.Node, []*oneTimeout, []driver.Node) {
	mem := make([]*memory.Node, n)
	counted := make([]*oneTimeout, n)
	nodes := make([]driver.Node, n)
	for i := range mem {
		mem[i] = memory.New(memory.WithName(fmt.Sprintf("n%d", i)))
		counted[i] = &oneTimeout{Node: mem[i]}
		nodes[i] = counted[i]
		if queued {
			nodes[i] = newBatchedNodeVia(mem[i], counted[i])
		}
	}
	return mem, counted, nodes
}

// failedExtends counts the Extends that failed.
type failedExtends struct {
	redlock.NopObserver
	n atomic.Int64
}

func (o *failedExtends) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(d redlock.ExtendDone) {
		if d.Err != nil {
			o.n.Add(1)
		}
	}
}

// One extension group's calls to a node that answers them (in 100ms each)
// but lets one of them time out (250ms): the node answered other calls of
// the group after that one was sent, so it is alive, and it must get every
// call of the group. Before, the one timeout marked it stalled for the rest
// of the group: the calls not yet sent to it were not sent (errKeeperStalled),
// 66 of 256 here (128 through the batcher), and with a third node silent
// those locks' extensions failed, short of a quorum. Under a loaded machine
// the same happened to nodes that answered all along (the timeout was the
// process's, not the node's). The third node answers nothing: it is still skipped after its
// first calls time out, one wave of KeeperFanout. Both for nodes that
// queue (the Redis drivers' batch.Batcher) and nodes that do not.
func TestKeeperLiveNodeTimeoutKeepsGettingCalls(t *testing.T) {
	for _, queued := range []bool{false, true} {
		t.Run(fmt.Sprintf("queued=%v", queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const locks = 4 * redlock.KeeperFanout
				mem, counted, nodes := oneTimeoutNodes(3, queued)
				failed := &failedExtends{}
				c := newClient(t, nodes, redlock.WithObserver(failed), redlock.WithTTL(6*time.Second), redlock.WithNodeTimeout(250*time.Millisecond))
				end := holdAll(t, c, locks) // all at one instant: their extensions are one group, at 2s
				// The SETs that the grants did not wait for are answered
				// before node 2 stalls: one left to time out on it there
				// made its Batcher find it silent since long before the
				// group, so that the group's first timeout on it failed
				// the calls queued behind that wave unsent (2 sent, not
				// 64: 1 run in 20-60).
				synctest.Wait()
				for _, n := range counted {
					n.extends.Store(0)
				}
				mem[0].SetLatency(100 * time.Millisecond)
				counted[0].armed.Store(true)
				mem[2].SetStalled(true)
				// The group, from 2s; the one extension that failed (its
				// call timed out on node 0, node 2 is silent) is tried
				// again at 2.75s, a quarter of the interval after.
				time.Sleep(2700 * time.Millisecond)
				live, silent := counted[0].extends.Load(), counted[2].extends.Load()
				assert.False(t, counted[0].armed.Load(), "no call of the group timed out")
				assert.Equal(t, int64(locks), live, "extensions sent to the node that answered all but one of the group's calls")
				assert.Equal(t, int64(redlock.KeeperFanout), silent, "extensions sent to the node that answers nothing: its first wave only")
				assert.Equal(t, int64(1), failed.n.Load(), "extensions that failed: only that of the lock whose call timed out on node 0")
				mem[2].SetStalled(false)
				mem[0].SetLatency(0)
				require.Zero(t, failedDo(end()))
			})
		})
	}
}

// A node that stops answering in the middle of an extension group is still
// skipped for the rest of the group: once a call sent after its last answer
// has timed out, its calls are not sent. Here it answers the group's first
// wave of calls (in 100ms), stalls with the second in flight, and gets no
// third wave beyond the calls sent in the instant the second timed out: at
// most three waves of KeeperFanout of the group's 256 calls. The third node
// answers nothing, so that no lock's extension is decided without the
// stalled node's vote (a decided one's calls are skipped anyway).
func TestKeeperNodeStalledMidGroupIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const locks = 4 * redlock.KeeperFanout
		mem, counted, nodes := oneTimeoutNodes(3, false)
		c := newClient(t, nodes, redlock.WithTTL(6*time.Second), redlock.WithNodeTimeout(250*time.Millisecond))
		end := holdAll(t, c, locks) // one group, at 2s
		counted[0].extends.Store(0)
		mem[0].SetLatency(100 * time.Millisecond)
		mem[2].SetStalled(true)
		time.Sleep(2150 * time.Millisecond) // the first wave answered at 2.1s
		mem[0].SetStalled(true)
		// The second wave times out at 2.35s, a third sent then at
		// 2.6s; the extensions that failed are tried again from 2.85s.
		time.Sleep(550 * time.Millisecond)
		sent := counted[0].extends.Load()
		assert.GreaterOrEqual(t, sent, int64(2*redlock.KeeperFanout), "the second wave was sent")
		assert.LessOrEqual(t, sent, int64(3*redlock.KeeperFanout), "extensions sent to the node once it stalled")
		mem[0].SetStalled(false)
		mem[2].SetStalled(false)
		mem[0].SetLatency(0)
		end()
	})
}
