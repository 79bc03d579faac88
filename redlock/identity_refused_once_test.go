package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// A node that refuses the identity question for good (NOPERM: an ACL user
// without +info) is asked once, not again at every acquisition once per
// second for as long as the Client lives: WithLogger warns of it once, not
// about once a second per node (180 Warn records in 60s for three such
// nodes, one TryLock a second, before), and the node gets one INFO, not one
// a second. A node whose question failed otherwise (down) is still asked
// again (TestConnectStalledMinority). With Connect first, neither Connect
// again nor the acquisitions ask. In a bubble (testing/synctest): a minute
// of acquisitions takes no time.
func TestIdentityRefusedAskedOnce(t *testing.T) {
	for _, connect := range []bool{false, true} {
		t.Run(fmt.Sprint("connect=", connect), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids, nodes := countedIDNodes(3)
				for _, n := range ids {
					n.fail = errNoInfo
				}
				var logs syncbuf.Buffer
				c := newClient(t, nodes, redlock.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
				if connect {
					require.NoError(t, c.Connect(t.Context()), "a refusal answers, for Connect")
				}
				for i := range 60 {
					l, err := c.TryLock(t.Context(), fmt.Sprint("k", i))
					require.NoError(t, err, "a node whose identity is unknown is taken as distinct")
					require.NoError(t, l.Unlock(t.Context()))
					time.Sleep(time.Second)
				}
				if connect {
					require.NoError(t, c.Connect(t.Context()))
				}
				synctest.Wait()
				require.Equal(t, []int32{1, 1, 1}, askedTimes(ids), "identity questions per node")
				warns := strings.Count(logs.String(), "redlock: node does not tell which server it is")
				require.Equal(t, 3, warns, "Warn records, one per node:\n%s", firstLines(logs.String(), 6))
			})
		})
	}
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := bytes.SplitN([]byte(s), []byte("\n"), n+1)
	return string(bytes.Join(lines[:min(n, len(lines))], []byte("\n")))
}

// laterIDNode refuses or fails its first identity question with first, and
// tells id from the second on.
type laterIDNode struct {
	*memory.Node
	id    string
	first error
	asked atomic.Int32
}

func (n *laterIDNode) Identity(context.Context) ([]string, error) {
	if n.asked.Add(1) == 1 {
		return nil, n.first
	}
	return []string{n.id}, nil
}

// A refusal of the identity question joined with another failure is not a
// refusal for good: a cluster node asks its primaries in turn (rueidis,
// valkey-go) and joins their errors, and one primary's NOPERM beside
// another's timeout must leave the node to be asked again, as must a
// refusal that came as the question's context ended (driver.ContextError
// joins the two). Here the node, asked again, turns out to be another
// address of node 1's server: the duplicate is found (ErrSameServer).
// Before, any error matching driver.CommandRefused was kept for good, and
// the duplicate was never found (the locks granted on two addresses of one
// server). In a bubble (testing/synctest).
func TestIdentityRefusalJoinedAskedAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first error
	}{
		{"joined with a timeout", errors.Join(errNoInfo, context.DeadlineExceeded)},
		{"as the context ended", fmt.Errorf("%w: %w", context.Canceled, errNoInfo)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ids, nodes := countedIDNodes(2)
				later := &laterIDNode{Node: memory.New(), id: ids[1].id, first: tc.first}
				nodes = append(nodes, later)
				c := newClient(t, nodes)
				var err error
				for i := 0; i < 5 && err == nil; i++ {
					var l *redlock.Lock
					if l, err = c.TryLock(t.Context(), fmt.Sprint("k", i)); err == nil {
						require.NoError(t, l.Unlock(t.Context()))
					}
					time.Sleep(2 * time.Second)
				}
				require.ErrorIs(t, err, redlock.ErrSameServer, "the node asked again tells it is node 2's server")
				require.EqualValues(t, 2, later.asked.Load(), "questions to the node")
			})
		})
	}
}
