package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/redlock"
)

// batchedNode is a memory node behind a batch.Batcher, as the goredis and
// redigo drivers put a server behind one: a driver.Queuer whose commands
// queue while batch.Senders batches are in flight, each batch bounded on the
// network by its calls' network timeout. A batch's calls go to the memory
// node together with the batch's context (a batch takes the node's latency
// once, as a pipeline does): on a stalled node (memory.Node.SetStalled, a
// server stopped with SIGSTOP) they wait until the batch's network
// deadline, as a pipeline's replies that never come.
type batchedNode struct {
	*memory.Node
	b *batch.Batcher[memCmd, bool]
}

type memCmd struct {
	op         int // 0 SetNX, 1 EvalRelease, 2 Extend
	key, value string
	ttl        time.Duration
}

func newBatchedNode(m *memory.Node) *batchedNode { return newBatchedNodeVia(m, m) }

// newBatchedNodeVia is newBatchedNode whose batches call via, a node in
// front of m (one that counts or fails calls), rather than m.
func newBatchedNodeVia(m *memory.Node, via driver.Node) *batchedNode {
	n := &batchedNode{Node: m}
	n.b = batch.New(func(ctx context.Context, calls []*batch.Call[memCmd, bool]) {
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Go(func() {
				switch c.Cmd.op {
				case 0:
					c.Res, c.Err = via.SetNX(ctx, c.Cmd.key, c.Cmd.value, c.Cmd.ttl)
				case 1:
					c.Res, c.Err = via.EvalRelease(ctx, c.Cmd.key, c.Cmd.value)
				default:
					c.Res, c.Err = via.Extend(ctx, c.Cmd.key, c.Cmd.value, c.Cmd.ttl)
				}
			})
		}
		wg.Wait()
	}, batch.Senders, batch.MaxBatch)
	return n
}

func (n *batchedNode) Pending() driver.Pending { return n.b.Pending() }

func (n *batchedNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.b.Do(ctx, memCmd{0, key, value, ttl})
}

func (n *batchedNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.b.Do(ctx, memCmd{op: 1, key: key, value: value})
}

func (n *batchedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.b.Do(ctx, memCmd{2, key, value, ttl})
}

// TestRedisKeeperPausedNodeKeepsLocks without the machine: five nodes that
// queue through the Redis drivers' batch.Batcher, 1,000 locks held through
// Do (TTL 3s, node timeout 500ms), one node stalled for 3×TTL. In a bubble
// the client takes no time to run, so that a lock lost here is the keeper's
// or the queue's doing, not a machine too loaded to run the client: the
// four nodes that answer must keep every lock, whether they answer at once
// or each batch in a few milliseconds. Three changes keep them, each alone
// (see keeper.extend): without the stalled-node check and errKeeperDecided
// on nodes that queue, and with validity capped by the earliest bound of
// the extensions in flight, 999-1,000 of the 1,000 were lost.
func TestKeeperPausedQueuedNodeKeepsLocks(t *testing.T) {
	for _, latency := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(fmt.Sprint(latency), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					locks = 1000
					ttl   = 3 * time.Second
				)
				mem := make([]*memory.Node, 5)
				nodes := make([]driver.Node, len(mem))
				for i := range nodes {
					mem[i] = memory.New(memory.WithName(fmt.Sprintf("b%d", i)))
					mem[i].SetLatency(latency)
					nodes[i] = newBatchedNode(mem[i])
				}
				c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(500*time.Millisecond))
				end := holdAll(t, c, locks)
				mem[0].SetStalled(true)
				time.Sleep(3 * ttl)
				mem[0].SetStalled(false)
				require.Zero(t, failedDo(end()), "locks lost (or not released by a quorum) with four of five nodes answering")
			})
		})
	}
}
