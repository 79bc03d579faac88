package redlock_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// queuer is a memory node that says it queues (driver.Queuer), as the nodes
// of every Redis driver do.
type queuer struct{ *memory.Node }

func (n queuer) Pending() driver.Pending { return driver.Pending{} }

// One node of five that queues answers every call in 100ms, half the node
// timeout (a server far away), while 2,000 locks taken at one instant are
// held through Do: the four others decide each extension at once, and no
// lock may be lost. The keeper hands a node keeperFanout of a group's calls
// at a time, queueing or not, so the far node took 32 of its answers, 3.2s,
// for the group, past the locks' bound; it went on being sent the calls of
// extensions already decided (only a node that does not queue was spared
// them), and a lock whose extension is in flight cannot have its validity
// raised by the next ones (Lock.Until): every lock but one was lost.
func TestKeeperFarQueuerKeepsLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			locks = 2000
			ttl   = 2 * time.Second
		)
		mem := make([]*memory.Node, 5)
		nodes := make([]driver.Node, len(mem))
		for i := range nodes {
			mem[i] = memory.New(memory.WithName(fmt.Sprintf("q%d", i)))
			nodes[i] = queuer{mem[i]}
		}
		c := newClient(t, nodes, redlock.WithTTL(ttl)) // node timeout 200ms
		end := holdAll(t, c, locks)                    // all at one instant: their extensions are one group
		mem[4].SetLatency(100 * time.Millisecond)
		time.Sleep(3 * ttl)
		mem[4].SetLatency(0)
		require.Zero(t, failedDo(end()), "locks lost (or not released by a quorum) with four of five nodes answering at once")
	})
}
