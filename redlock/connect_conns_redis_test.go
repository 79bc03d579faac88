package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// counts returns how many connections each proxy has accepted.
func counts(ps []*testproxy.Proxy) []int64 {
	n := make([]int64, len(ps))
	for i, p := range ps {
		n[i] = p.Accepted()
	}
	return n
}

// After Connect, a Client's first acquisition makes no connection, through
// every Redis driver: a TryLock, a Lock or a Do, with its Unlock (Do's
// own), each the first of a fresh Client, runs on the connections Connect
// left ready, so that none has to dial within its node timeout (see
// Connect). Each node's connections are counted at a proxy in front of its
// server (a testproxy.Proxy). (A call that overlaps an earlier one on a node, such as the
// release that an Unlock leaves in flight once a quorum answered, may still
// need a connection more: not counted here.)
func TestRedisConnectLeavesConnectionsReady(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	acquisitions := []struct {
		name string
		run  func(c *redlock.Client, key string) error
	}{
		{"TryLock", func(c *redlock.Client, key string) error {
			l, err := c.TryLock(t.Context(), key)
			if err != nil {
				return err
			}
			return l.Unlock(t.Context())
		}},
		{"Lock", func(c *redlock.Client, key string) error {
			l, err := c.Lock(t.Context(), key)
			if err != nil {
				return err
			}
			return l.Unlock(t.Context())
		}},
		{"Do", func(c *redlock.Client, key string) error {
			return c.Do(t.Context(), key, func(context.Context) error { return nil })
		}},
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			proxies := make([]*testproxy.Proxy, len(servers))
			addrs := make([]string, len(servers))
			for i, s := range servers {
				proxies[i] = testproxy.New(t, s.Addr())
				addrs[i] = proxies[i].Addr()
			}
			for _, a := range acquisitions {
				c, err := redlock.Open(name, addrs, slow...)
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				before := counts(proxies)
				require.NoError(t, c.Connect(ctx))
				cancel()
				connected := counts(proxies)
				for i := range connected {
					require.Greater(t, connected[i], before[i], "node %d: Connect made no connection", i)
				}
				require.NoError(t, a.run(c, name+"/"+a.name))
				after := counts(proxies)
				require.NoError(t, c.Close())
				byConnect, made := make([]int64, len(after)), make([]int64, len(after))
				for i := range after {
					byConnect[i], made[i] = connected[i]-before[i], after[i]-connected[i]
				}
				t.Logf("connections per node: Connect %v, then %s %v", byConnect, a.name, made)
				require.Equal(t, make([]int64, len(after)), made, "%s after Connect made connections on the nodes", a.name)
			}
		})
	}
}
