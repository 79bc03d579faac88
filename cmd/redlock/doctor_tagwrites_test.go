//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// doctor on a cluster node with a --key whose hash tag puts every key beside
// it (its scratch keys, the locks like it) in one slot: the writes check,
// which takes and releases a lock on a scratch key of each primary, can
// write on the primary of that slot alone. Its report named that primary
// and said nothing of the others, where the README says that the checks run
// on every primary that serves slots, naming those that gave each verdict;
// it now names the others as not checked here, as the permissions check
// does on its scratch path.
func TestDoctorClusterTaggedKeyWrites(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	const key = "{jobs}:nightly"
	var served, other string
	for _, s := range c.Shards() {
		if c.SlotShard(redistest.KeySlot(key)).Index() == s.Index() {
			served = s.Primary().Addr()
		} else {
			other = s.Primary().Addr()
		}
	}
	rep, r := doctorJSON(t, c.URL(), "--key", key)
	if r.code != 0 || len(rep.Nodes) != 1 {
		t.Fatalf("doctor on a healthy cluster: want exit 0 and one node, got %v", r)
	}
	ch, ok := findCheck(rep.Nodes[0].Checks, "writes", statusOK)
	if !ok {
		t.Fatalf("no writes check ok: %+v", rep.Nodes[0].Checks)
	}
	if !strings.Contains(ch.Message, served+": a lock taken and released") {
		t.Errorf("writes: want the lock taken on %s, the primary of the key's slot, got %q", served, ch.Message)
	}
	if !strings.Contains(ch.Message, other+": not checked here") {
		t.Errorf("writes: want %s, the other primary, named as not checked, got %q", other, ch.Message)
	}
}
