package redlock_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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
				var logs syncBuffer
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
