//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// A user who may read the lock's key but not its fencing counter in use
// (keys app:* only; without --prefix the counter is redlock:fence:{T}) gets
// from status what the nodes hold for the key, held with its TTL, and the
// counter as unreadable: FENCE "?" and the NOPERM in ERROR, --json held and
// ttl_ms with fence_error, no fence and no error; the verdict counts the
// nodes as answered, and status exits 0. It said "GET of the fencing
// counter: NOPERM" for the whole row of every node, nothing of the key, and
// exited 1.
func TestStatusCounterUnreadable(t *testing.T) {
	t.Parallel()
	const user, password = "apponly", "app-0nly-Passw0rd"
	var urls []string
	for _, s := range redistest.NewServers(t, 3) {
		for _, args := range [][]string{
			{"ACL", "SETUSER", user, "on", ">" + password, "~app:*", "&*", "+@all"},
			{"SET", "app:k", "v", "PX", "60000"},
			{"SET", driver.FenceKey("app:k"), "41"},
		} {
			if _, err := s.Do(t.Context(), args...); err != nil {
				t.Fatal(err)
			}
		}
		urls = append(urls, "redis://"+user+":"+password+"@"+s.Addr())
	}
	addrs := strings.Join(urls, ",")

	r := invoke(t, "", "status", "--nodes", addrs, "--json", "app:k")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != exitOK {
		t.Fatalf("status --json: exit %d, want 0: %v\n%v", r.code, err, r)
	}
	k := rep.Keys[0]
	if k.State != keyHeld || k.HeldOn != 3 || k.Answered != 3 || k.Fence != nil {
		t.Errorf("status --json: key %+v; want held on 3 of 3, 3 answered, no fence", k)
	}
	for _, n := range k.Nodes {
		if n.Error != "" || n.Held == nil || !*n.Held || n.TTLMillis == nil || *n.TTLMillis <= 0 || n.Fence != nil || !strings.Contains(n.FenceError, "NOPERM") {
			t.Errorf("status --json: node %+v; want held with a TTL, fence_error NOPERM, no fence, no error", n)
		}
	}

	r = invoke(t, "", "status", "--nodes", addrs, "app:k")
	if r.code != exitOK {
		t.Fatalf("status: exit %d, want 0\n%v", r.code, r)
	}
	rows := 0
	for line := range strings.Lines(r.stdout) {
		if f := strings.Fields(line); len(f) > 5 && f[0] == "app:k" {
			rows++
			if f[2] != "yes" || f[3] == "?" || f[3] == "-" || f[4] != "?" || !strings.Contains(line, "NOPERM") {
				t.Errorf("status: row %q; want HELD yes, a TTL, FENCE ?, the NOPERM in ERROR", line)
			}
		}
	}
	if rows != 3 || !strings.Contains(r.stdout, "app:k: held: held on 3 of 3 nodes, 3 answered") {
		t.Errorf("status: %d rows, want 3, and the key held on 3 of 3:\n%s", rows, r.stdout)
	}
}
