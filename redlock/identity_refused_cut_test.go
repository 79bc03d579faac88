package redlock_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// cutRefusalNode refuses the identity question (NOPERM). Its first refusal
// comes as the question's context ends, as a driver reports a reply that
// arrived as its context ended (driver.ContextError: "context canceled:
// NOPERM ..."); later ones come at once.
type cutRefusalNode struct {
	*memory.Node
	asked atomic.Int32
}

func (n *cutRefusalNode) Identity(ctx context.Context) ([]string, error) {
	if n.asked.Add(1) == 1 {
		<-ctx.Done()
		return nil, driver.ContextError(ctx, errNoInfo)
	}
	return nil, errNoInfo
}

// A refusal of the identity question that Connect cut (it had decided: a
// quorum answered and a node timeout passed) is not taken as told: Connect
// does not report a question it cut (see its doc), so a refusal recorded
// then, never asked again (a refusal is for good), would never be told
// either, though README says WithLogger warns of each such node once. The
// acquisition after Connect asks the node again, and its refusal is warned
// of once. Before, the cut refusal was recorded silently: no Warn at all.
func TestIdentityRefusalCutByConnectTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids, nodes := countedIDNodes(3)
		late := &cutRefusalNode{Node: memory.New()}
		nodes[2] = late
		var logs syncbuf.Buffer
		c := newClient(t, nodes, redlock.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		require.NoError(t, c.Connect(t.Context()), "a quorum answered")
		require.Equal(t, int32(1), late.asked.Load())
		for range 3 {
			l, err := c.TryLock(t.Context(), "k")
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
		}
		synctest.Wait()
		require.Equal(t, []int32{1, 1}, askedTimes(ids[:2]), "the nodes that answered are not asked again")
		warns := strings.Count(logs.String(), "redlock: node does not tell which server it is")
		require.Equal(t, 1, warns, "Warn records for the refusing node (asked %d times):\n%s", late.asked.Load(), firstLines(logs.String(), 6))
	})
}
