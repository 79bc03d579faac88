package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// A cluster-enabled server given as one server (a one-shard cluster, which
// serves every slot) locks with fencing a key whose legacy fencing counter
// lies in another hash slot (a '}' without a hash tag): the server refuses
// the script with both counters (CROSSSLOT) before running it, and the driver
// sends it again without the legacy one. Tokens still rise.
func TestFencingOnClusterEnabledServerGivenAsOne(t *testing.T) {
	cl := redistest.NewCluster(t, 1)
	addr := cl.Shards()[0].Primary().Addr()
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, []string{addr}, redlock.WithFencing())
			require.NoError(t, err)
			defer c.Close()
			var last uint64
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				l, err := c.TryLock(ctx, "a}b-"+name)
				cancel()
				require.NoError(t, err)
				require.Greater(t, l.Token(), last)
				last = l.Token()
				require.NoError(t, l.Unlock(context.Background()))
			}
		})
	}
}
