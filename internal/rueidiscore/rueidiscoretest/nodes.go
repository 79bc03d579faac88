package rueidiscoretest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

// NodesOfOneMap shows why New does not check a caller's cluster client by
// its Nodes(), as goredis's New checks a client's seeds: nodeIDs makes a
// cluster client of seeds and returns, for each of its Nodes() (by
// address), the node ID that CLUSTER MYID answers there. Over seeds of two
// clusters (two of a, one of b), each of 8 clients' Nodes() are nodes of one
// cluster alone, and b's seed is not among them when they are a's: Nodes()
// are the client's slot map, read from one server, which names its own
// cluster's nodes only, and leave out the seeds outside it. A check that
// they are all one cluster thus always passes, whichever cluster the client
// happened to read; the hazard, seeds of two clusters, is not in what the
// client tells.
func NodesOfOneMap(t *testing.T, nodeIDs func(t *testing.T, seeds []string) map[string]string) {
	t.Helper()
	a := redistest.NewCluster(t, 2)
	b := redistest.NewCluster(t, 1)
	ids := func(c *redistest.Cluster) []string {
		var s []string
		for _, sh := range c.Shards() {
			s = append(s, sh.ID())
		}
		return s
	}
	aIDs, bIDs := ids(a), ids(b)
	seeds := []string{a.Seeds()[0], a.Seeds()[1], b.Seeds()[0]}
	for i := range 8 {
		nodes := nodeIDs(t, seeds)
		require.NotEmpty(t, nodes, "client %d: no nodes", i)
		in := func(ids []string) bool {
			for _, id := range nodes {
				if !slices.Contains(ids, id) {
					return false
				}
			}
			return true
		}
		require.True(t, in(aIDs) || in(bIDs), "client %d: Nodes() of two clusters: %v (a %v, b %v)", i, nodes, aIDs, bIDs)
		if in(aIDs) {
			require.NotContains(t, nodes, b.Seeds()[0], "client %d: the other cluster's seed among Nodes()", i)
		}
	}
}
