//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// doctor on a cluster node whose user may not run CLUSTER SLOTS, the slot
// map that every driver's cluster client reads first: no lock can be taken
// there (NOPERM for 'cluster|slots' from goredis, rueidis and valkeygo alike),
// so the permissions check fails, with ACL DRYRUN and on a scratch key. It
// passed: the check covered the lock commands alone, and doctor said the node
// was fit while `redlock run` could never lock on it.
func TestDoctorClusterSlotsPermission(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Cluster-Passw0rd"
	c := clusterWithUsers(t, password, map[string][]string{
		"dryrun":  {"-cluster|slots"},
		"scratch": {"-cluster|slots", "-acl"},
	})
	seeds := c.Seeds()
	for _, user := range []string{"dryrun", "scratch"} {
		t.Run(user, func(t *testing.T) {
			addr := "redis://" + user + ":" + password + "@" + seeds[0] + "?cluster=true&addr=" + strings.Join(seeds[1:], "&addr=")
			if r := invoke(t, "", "run", "--nodes", addr, "--wait", "0", "k", "--", "true"); r.code == 0 {
				t.Fatalf("run as a user without CLUSTER SLOTS: want a failure, got %v", r)
			}
			rep, r := doctorJSON(t, addr)
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Fatalf("doctor printed the password:\n%v", r)
			}
			ch, ok := findCheck(rep.Nodes[0].Checks, "permissions", statusFail)
			if !ok {
				t.Fatalf("no failed permissions check for a user without CLUSTER SLOTS: %+v", rep.Nodes[0].Checks)
			}
			if !strings.Contains(ch.Message, "CLUSTER SLOTS") {
				t.Errorf("the failed permissions check does not name CLUSTER SLOTS: %s", ch.Message)
			}
			if r.code != exitFailure {
				t.Errorf("doctor: want exit %d, got %v", exitFailure, r)
			}
		})
	}
}

// clusterWithUsers starts a cluster of two shards on every server of which
// each user of users may run every command and key but what its rules then
// take away, with password.
func clusterWithUsers(t *testing.T, password string, users map[string][]string) *redistest.Cluster {
	t.Helper()
	c := redistest.NewCluster(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, s := range c.Servers() {
		for user, rules := range users {
			acl := append([]string{"ACL", "SETUSER", user, "on", ">" + password, "~*", "&*", "+@all"}, rules...)
			if _, err := s.Do(ctx, acl...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}
