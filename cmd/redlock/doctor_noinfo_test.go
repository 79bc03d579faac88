//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// A user without +info takes locks (run and hold warn that the nodes do not
// tell which server they are: one server under two addresses would count
// twice, unseen), as the README's ACL rule says: "Without +info ... locks
// still work but that check is skipped". doctor warns of it; it does not fail
// the node for a permission "every lock needs", and its verdict is a warning
// (exit 0), as for a user that may not run ACL DRYRUN, whose permissions are
// checked on a scratch key, where INFO is not among them.
func TestDoctorUserWithoutInfoWarns(t *testing.T) {
	t.Parallel()
	addrs := aclUserNodes(t, 3, "noinfo", "no-1nfo-Passw0rd", "~*", "&*", "+@all", "-info")

	if r := invoke(t, "", "run", "--nodes", addrs, "--node-timeout", "2s", "k", "--", "true"); r.code != exitOK {
		t.Fatalf("run as a user without +info: want exit 0 (locks work without INFO), got %v", r)
	}

	rep, r := doctorJSON(t, addrs)
	if r.code != exitOK {
		t.Errorf("doctor for a user without +info: want exit 0 (warnings), got exit %d", r.code)
	}
	for _, n := range rep.Nodes {
		for _, c := range n.Checks {
			if c.Status == statusFail {
				t.Errorf("node %s: check %s failed for a user without +info, whose locks work: %q", n.Addr, c.Name, c.Message)
			}
		}
		c, ok := findCheck(n.Checks, "permissions", statusWarn)
		if !ok || !strings.Contains(c.Message, "INFO") || !strings.Contains(c.Message, "two addresses") {
			t.Errorf("node %s: want a permissions warning that names INFO and what it is for (one server under two addresses), got %+v", n.Addr, n.Checks)
		}
	}
}

// aclUserNodes starts n servers, makes on each the ACL user user with
// password and rules, and returns their addresses as that user, joined
// with commas as --nodes takes them.
func aclUserNodes(t *testing.T, n int, user, password string, rules ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var urls []string
	for _, s := range redistest.NewServers(t, n) {
		acl := append([]string{"ACL", "SETUSER", user, "on", ">" + password}, rules...)
		if _, err := s.Do(ctx, acl...); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "redis://"+user+":"+password+"@"+s.Addr())
	}
	return strings.Join(urls, ",")
}

// The duplicates warning of a set where one node gave no run_id (its user
// may not run INFO) counts it as one node, not "1 node(s)".
func TestDoctorNoRunIDCount(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 2)
	addrs := aclUserNodes(t, 1, "noinfo", "no-1nfo-Passw0rd", "~*", "&*", "+@all", "-info") + "," + servers[0].Addr() + "," + servers[1].Addr()
	rep, r := doctorJSON(t, addrs)
	ch, ok := findCheck(rep.Checks, "duplicates", statusWarn)
	if !ok || r.code != exitOK {
		t.Fatalf("doctor with one node without INFO: want a duplicates warning and exit 0, got exit %d: %+v", r.code, rep.Checks)
	}
	if want := "no duplicate found, but 1 node gave no run_id to compare"; ch.Message != want {
		t.Errorf("duplicates warning: %q, want %q", ch.Message, want)
	}
}
