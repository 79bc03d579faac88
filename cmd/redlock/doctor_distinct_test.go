//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestDoctorDistinctClusters: doctor's duplicates check over a set with a
// node that is a Redis Cluster says how it compared the nodes: servers by
// run_id, a cluster by its node IDs. It said "3 distinct servers (run_id)"
// of two servers and a cluster of two, as if the cluster were one server
// told apart by a run_id.
func TestDoctorDistinctClusters(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2)
	servers := redistest.NewServers(t, 2)
	rep, r := doctorJSON(t, strings.Join([]string{servers[0].Addr(), c.URL(), servers[1].Addr()}, ","))
	if r.code != 0 {
		t.Fatalf("doctor on two servers and a cluster: %v", r)
	}
	ch, ok := findCheck(rep.Checks, "duplicates", statusOK)
	if !ok {
		t.Fatalf("no passed duplicates check: %+v", rep.Checks)
	}
	if want := "3 distinct nodes (servers by run_id, Redis Clusters by node ID)"; ch.Message != want {
		t.Errorf("duplicates check: %q, want %q", ch.Message, want)
	}

	// Without a cluster, the line stays as it was.
	rep, _ = doctorJSON(t, strings.Join([]string{servers[0].Addr(), servers[1].Addr()}, ","))
	if ch, ok := findCheck(rep.Checks, "duplicates", statusOK); !ok || ch.Message != "2 distinct servers (run_id)" {
		t.Errorf("duplicates check of two servers: %+v", rep.Checks)
	}
}
