//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// doctor on cluster nodes: the shards, the replicas a failover could
// promote, a cluster given twice under other seeds, and unassigned slots.
func TestDoctorCluster(t *testing.T) {
	t.Parallel()
	c := redistest.NewCluster(t, 2, redistest.WithReplicas(1))
	seeds := c.Seeds()
	other := "redis://" + seeds[1] + "?cluster=true" // the same cluster from another seed
	single := redistest.NewServer(t)

	rep, r := doctorJSON(t, strings.Join([]string{c.URL(), other, single.Addr()}, ","))
	if r.code == 0 {
		t.Fatalf("doctor on one cluster given twice: want a failure, got %v", r)
	}
	if _, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok {
		t.Errorf("no failed duplicates check for a cluster given under two seeds: %+v", rep.Checks)
	}
	n := rep.Nodes[0]
	if !n.Reachable || len(n.Shards) != 2 {
		t.Fatalf("cluster node: want reachable with 2 shards, got %+v", n)
	}
	for _, s := range n.Shards {
		if len(s.Replicas) != 1 || s.Slots == 0 {
			t.Errorf("shard %+v: want one replica and some slots", s)
		}
	}
	if _, ok := findCheck(n.Checks, "replicas", statusWarn); !ok {
		t.Errorf("no replicas warning: %+v", n.Checks)
	}
	if _, ok := findCheck(n.Checks, "slot map", statusOK); !ok {
		t.Errorf("the primaries of a healthy cluster do not agree on the slot map: %+v", n.Checks)
	}
	if _, ok := findCheck(n.Checks, "cluster", statusWarn); ok {
		t.Errorf("a cluster given as a cluster is warned about cluster mode: %+v", n.Checks)
	}

	// A shard's primary given as a server beside its cluster.
	rep, r = doctorJSON(t, strings.Join([]string{c.URL(), seeds[0], single.Addr()}, ","))
	if _, ok := findCheck(rep.Checks, "duplicates", statusFail); !ok || r.code == 0 {
		t.Errorf("no failed duplicates check for a shard's primary beside its cluster: %+v", rep.Checks)
	}

	// A slot that no shard serves.
	if _, err := c.Shards()[0].Primary().Do(t.Context(), "CLUSTER", "DELSLOTS", "0"); err != nil {
		t.Fatal(err)
	}
	rep, _ = doctorJSON(t, c.URL())
	if ch, ok := findCheck(rep.Nodes[0].Checks, "slots", statusFail); !ok || !strings.Contains(ch.Message, "1 slot") {
		t.Errorf("no failed slots check after DELSLOTS 0: %+v", rep.Nodes[0].Checks)
	}
}

// doctor on a cluster node that requires TLS and a password: the shards are
// read over TLS too, and the report never shows the password.
func TestDoctorClusterTLS(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword("doctor-cluster-secret")))
	rep, r := doctorJSON(t, c.URL())
	if strings.Contains(r.stdout+r.stderr, "doctor-cluster-secret") {
		t.Fatalf("the report shows the password:\n%v", r)
	}
	n := rep.Nodes[0]
	if !n.Reachable || len(n.Shards) != 2 {
		t.Fatalf("cluster node over TLS: want reachable with 2 shards, got %+v", n)
	}
	if _, ok := findCheck(n.Checks, "slot map", statusOK); !ok {
		t.Errorf("the slot map was not read from every primary over TLS: %+v", n.Checks)
	}
}
