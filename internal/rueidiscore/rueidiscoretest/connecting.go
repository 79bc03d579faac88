package rueidiscoretest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// FirstUseErrorNamesCall checks the error of a call that a node of d's Open
// over a Redis Cluster fails because its client is still being created (a
// seed's primary hangs: the creation waits for it, longer than the call's
// context): like any failed call of a cluster node, it names the driver,
// the command and the key's slot, and matches the context's error. It was
// the context's error alone ("context deadline exceeded"), which told
// neither the driver, nor what was waited for, nor which shard.
func FirstUseErrorNamesCall(t *testing.T, d driver.Driver, name string) {
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(
		redistest.WithConfig("cluster-require-full-coverage", "no")))
	hung := c.Shards()[1]
	require.NoError(t, hung.Primary().Pause())
	t.Cleanup(func() { hung.Primary().Resume() })
	n, err := d.Open(c.URL())
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	key := keyOnShard(c, hung, 0)
	_, err = n.SetNX(testContext(t, 100*time.Millisecond), key, "v", time.Minute)
	require.Error(t, err, "SET NX while the client waits for the hung primary")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	want := fmt.Sprintf("%s: SET NX: slot %d", name, driver.HashSlot(key))
	require.ErrorContains(t, err, want, "the error names the driver, the command and the slot")
	if strings.Contains(err.Error(), "primary") { // once the node has read the slot map
		require.ErrorContains(t, err, want+", primary "+hung.Primary().Addr()+":")
	}
	require.ErrorContains(t, err, "connecting", "the error says what the call waited for")
	require.False(t, errors.Is(err, driver.ErrClosed))
}
