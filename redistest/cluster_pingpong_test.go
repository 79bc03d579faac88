package redistest_test

import (
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestClusterMigrateSlotBackAndForth moves one slot between two shards,
// again and again, as tests that migrate a slot to and fro under locks do:
// each move must succeed and leave every node agreeing that the shard it
// went to serves it. A move made while the target did not yet know the
// cluster's greatest config epoch took the slot under an epoch below the
// source's, and the source's earlier claim, still on its way over the
// cluster bus, took it back: the next move failed with 'ERR I'm not the
// owner of hash slot', or the move itself waited its minute for a slot
// map that had turned back.
func TestClusterMigrateSlotBackAndForth(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	slot := redistest.KeySlot("{pingpong}")
	for i := range 40 {
		to := c.Shards()[(c.SlotShard(slot).Index()+1)%2]
		if err := c.MigrateSlot(t.Context(), slot, to); err != nil {
			t.Fatalf("move %d of slot %d to shard %d: %v", i+1, slot, to.Index(), err)
		}
		for _, srv := range c.Servers() {
			if got := slotMap(t, srv)[slot]; got != to.Primary().Addr() {
				t.Fatalf("after move %d, %s says slot %d is served by %q, want %s", i+1, srv.Addr(), slot, got, to.Primary().Addr())
			}
		}
	}
}
