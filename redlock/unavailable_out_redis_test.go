package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestUnavailableOutDecide through every driver, against servers: of three
// nodes, one holds the key for another (it refuses at once), one is down
// (nothing listens on its port) and one is paused (SIGSTOP: it answers
// nothing). Two of three failed, so no quorum was possible even had the
// holder's node agreed: ErrUnavailable. The refusal and the down node's
// error decided the attempt before the paused node's timeout, and TryLock
// said "1 refused, 1 failed", a key merely held elsewhere.
func TestRedisUnavailableOutDecide(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	held, paused := servers[0], servers[1]
	addrs := []string{held.Addr(), redistest.DownAddrs(t, 1)[0], paused.Addr()}
	require.NoError(t, paused.Pause())
	t.Cleanup(func() { paused.Resume() })
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			key := "unavailable-" + name
			_, err := held.Do(t.Context(), "SET", key, "another's", "PX", "60000")
			require.NoError(t, err)
			c, err := redlock.Open(name, addrs, redlock.WithNodeTimeout(300*time.Millisecond))
			require.NoError(t, err)
			defer c.Close()
			for range 3 {
				_, err = c.TryLock(t.Context(), key)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorIs(t, err, redlock.ErrUnavailable, "%v", err)
				var v *redlock.VoteError
				require.ErrorAs(t, err, &v)
				// 1 refused, 2 failed; or 3 failed on a machine so loaded
				// that the holder's node took longer than the node timeout.
				require.GreaterOrEqual(t, v.Failed, 2, "%v", err)
				require.Equal(t, 3, v.Refused+v.Failed, "%v", err)
			}
		})
	}
}

// The same rule where the refusal is the Client's own: of five nodes, three
// down, back-to-back TryLocks of one key. A failed TryLock releases in the
// background the two live nodes where its SET was granted; the next one can
// find its predecessor's key there still (a refusal) and, decided by that
// refusal and two of the down nodes' errors, said "1 refused, 2 failed",
// ErrNotObtained alone, in 0-7 of 30 calls per driver (found by an outside
// check). Every one now matches ErrUnavailable.
func TestRedisUnavailableOutOwnLeftovers(t *testing.T) {
	servers := redistest.NewServers(t, 2)
	addrs := append(redistest.DownAddrs(t, 3), redistest.Addrs(servers)...)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.Open(name, addrs)
			require.NoError(t, err)
			defer c.Close()
			key := "leftovers-" + name
			for i := range 30 {
				_, err = c.TryLock(t.Context(), key)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.ErrorIs(t, err, redlock.ErrUnavailable, "TryLock %d: %v", i, err)
			}
		})
	}
}
