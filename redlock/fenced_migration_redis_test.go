package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The README's account of fencing while a slot migrates: every fenced
// acquisition of a key of the slot fails on the cluster node (TRYAGAIN) for
// the whole migration, before any key moved and after the fencing counter
// moved alike, and works again once it is finished. The README and doctor
// said only that a lock whose key and counter were split between the shards
// failed: a fenced TryLock failed before MoveKeys moved anything.
//
// The node timeout is 2s, not the default 200ms: the first TryLock connects
// (the cluster's map, then the shard), which took longer than 200ms under
// -race on a loaded machine (1 run of 20: "SET NX fence: ... i/o timeout"),
// and a TryLock that times out says nothing of TRYAGAIN.
func TestClusterFencedLockFailsWhileSlotMigrates(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	cl, err := redlock.Open("goredis", []string{c.URL()}, redlock.WithFencing(), redlock.WithTTL(10*time.Second),
		redlock.WithNodeTimeout(2*time.Second))
	require.NoError(t, err)
	defer cl.Close()
	const key = "fenced-migrating"
	l, err := cl.TryLock(t.Context(), key) // the slot's fencing counter, on the shard it leaves
	require.NoError(t, err)
	require.NoError(t, l.Unlock(t.Context()))
	slot := redistest.KeySlot(key)
	m, err := c.StartMigration(t.Context(), slot, c.Shards()[(c.SlotShard(slot).Index()+1)%2])
	require.NoError(t, err)
	_, err = cl.TryLock(t.Context(), key)
	require.ErrorContains(t, err, "TRYAGAIN", "a fenced TryLock once the slot migrates, nothing moved")
	moved, err := m.MoveKeys(t.Context(), 10)
	require.NoError(t, err)
	require.NotEmpty(t, moved, "the fencing counter")
	_, err = cl.TryLock(t.Context(), key)
	require.ErrorContains(t, err, "TRYAGAIN", "a fenced TryLock once the counter moved")
	require.NoError(t, m.Finish(t.Context()))
	l, err = cl.TryLock(t.Context(), key)
	require.NoError(t, err, "a fenced TryLock once the migration is finished")
	require.NoError(t, l.Unlock(t.Context()))
}
