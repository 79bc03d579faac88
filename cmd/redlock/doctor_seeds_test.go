//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// A node given as a cluster whose seeds are nodes of two different
// clusters is unsafe: the cluster clients read the slot map from a seed
// taken at random (go-redis and rueidis shuffle them), so two Clients
// opened with this one address can lock on different clusters and both be
// granted one lock (1 shard each, quorum 1: 2 of 12 Clients were, with
// each driver). doctor read only the first seed that answered and said ok.
// A seed that does not answer is a warning: the clients skip it.
func TestDoctorClusterSeedsOfTwoClusters(t *testing.T) {
	t.Parallel()
	a := redistest.NewCluster(t, 2)
	b := redistest.NewCluster(t, 1)
	dead := redistest.DownAddrs(t, 1)[0]

	mixed := "redis://" + a.Seeds()[0] + "?cluster=true&addr=" + a.Seeds()[1] + "&addr=" + b.Seeds()[0]
	rep, r := doctorJSON(t, mixed)
	if r.code != 1 {
		t.Errorf("doctor on a node whose seeds are two clusters: want exit 1, got %v", r)
	}
	c, ok := findCheck(rep.Nodes[0].Checks, "seeds", statusFail)
	if !ok || !strings.Contains(c.Message, b.Seeds()[0]) || strings.Contains(c.Message, a.Seeds()[1]+" ") {
		t.Errorf("want a failed seeds check naming %s (the other cluster's seed) alone, got %+v", b.Seeds()[0], rep.Nodes[0].Checks)
	}

	oneDown := "redis://" + dead + "?cluster=true&addr=" + strings.Join(a.Seeds(), "&addr=")
	rep, r = doctorJSON(t, oneDown)
	if c, ok := findCheck(rep.Nodes[0].Checks, "seeds", statusWarn); !ok || !strings.Contains(c.Message, dead) {
		t.Errorf("want a seeds warning naming the seed that does not answer, %s, got %+v (%v)", dead, rep.Nodes[0].Checks, r)
	}
	if _, ok := findCheck(rep.Nodes[0].Checks, "seeds", statusFail); ok || r.code != 0 {
		t.Errorf("a seed down is no failure: %v", r)
	}

	rep, r = doctorJSON(t, a.URL())
	if _, ok := findCheck(rep.Nodes[0].Checks, "seeds", statusOK); !ok || r.code != 0 {
		t.Errorf("every seed of one cluster: want an ok seeds check and exit 0, got %+v (%v)", rep.Nodes[0].Checks, r)
	}
}
