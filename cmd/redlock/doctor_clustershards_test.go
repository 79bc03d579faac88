//go:build unix

package main

import (
	"strings"
	"testing"
)

// doctor on a cluster node whose user may run CLUSTER SLOTS but not CLUSTER
// SHARDS, as the README's rule for a cluster node allowed before it named
// +cluster|shards: the cluster clients of rueidis and valkey-go read the slot
// map with CLUSTER SHARDS from servers of version 8 and later, where no lock
// can then be taken with those drivers. doctor warns, with ACL DRYRUN and on
// a scratch key; it said nothing. With CLUSTER SHARDS allowed it does not
// warn.
func TestDoctorClusterShardsPermission(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Shards-Passw0rd"
	c := clusterWithUsers(t, password, map[string][]string{
		"dryrun":  {"-cluster|shards"},
		"scratch": {"-cluster|shards", "-acl"},
		"allowed": nil,
	})
	seeds := c.Seeds()
	for _, user := range []string{"dryrun", "scratch", "allowed"} {
		t.Run(user, func(t *testing.T) {
			addr := "redis://" + user + ":" + password + "@" + seeds[0] + "?cluster=true&addr=" + strings.Join(seeds[1:], "&addr=")
			rep, r := doctorJSON(t, addr)
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Fatalf("doctor printed the password:\n%v", r)
			}
			var warned bool
			for _, ch := range rep.Nodes[0].Checks {
				if ch.Name == "permissions" && strings.Contains(ch.Message, "CLUSTER SHARDS") {
					warned = true
					if ch.Status != statusWarn {
						t.Errorf("CLUSTER SHARDS denied: want a warning, got %s: %s", ch.Status, ch.Message)
					}
				}
			}
			if want := user != "allowed"; warned != want {
				t.Errorf("user %s: warned of CLUSTER SHARDS: %v, want %v; checks: %+v", user, warned, want, rep.Nodes[0].Checks)
			}
		})
	}
}
