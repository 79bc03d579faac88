//go:build unix

package main

import (
	"strings"
	"testing"
)

// A user whose keys are app:* only may take locks on keys app:* without a
// prefix and read their TTL (Lock.TTL runs PTTL on the lock's key, in
// app:*), but may not read their fencing counter, the unprefixed
// redlock:fence:{T}, which status reads beside the key (with --prefix app:
// the counter is app:redlock:fence:{T}, which the user may read: no
// warning then). doctor warns of the counter read for status, and does not
// say that Lock.TTL fails, which only a refused PTTL on the key would make
// it do.
func TestDoctorCounterReadDeniedSparesLockTTL(t *testing.T) {
	t.Parallel()
	addrs := aclUserNodes(t, 3, "apponly", "app-0nly-Passw0rd", "~app:*", "&*", "+@all")
	rep, r := doctorJSON(t, addrs, "--key", "app:k")
	if r.code != exitOK {
		t.Errorf("doctor as a user of app:* with --key app:k: want exit 0 (warnings), got exit %d", r.code)
	}
	for _, n := range rep.Nodes {
		var counterRead bool
		for _, c := range n.Checks {
			if c.Name != "permissions" {
				continue
			}
			if strings.Contains(c.Message, "Lock.TTL fail") {
				t.Errorf("node %s: a user that may run PTTL on the key is told that Lock.TTL fails: %q", n.Addr, c.Message)
			}
			if c.Status == statusWarn && strings.Contains(c.Message, "redlock status") && strings.Contains(c.Message, "redlock:fence:") {
				counterRead = true
			}
		}
		if !counterRead {
			t.Errorf("node %s: want a permissions warning that status cannot read the fencing counter, got %+v", n.Addr, n.Checks)
		}
	}
}
