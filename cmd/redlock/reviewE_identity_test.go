//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestRunOneAttemptFindsSameServerTwice: one server under two addresses
// (127.0.0.1:P and localhost:P) is refused by run and hold at their first
// attempt, as status refuses it, even when it keeps that attempt from a
// quorum. The key's first SET grants on one address and the second refuses
// on the other (the key is set already), which looked like a lock held
// elsewhere: run --wait 0 exited with 75 ("held elsewhere"), and, with
// --conflict-exit-code 0 (flock -E 0), with 0 in silence, CMD never run,
// every time. The identities were checked only for a round a quorum
// granted.
func TestRunOneAttemptFindsSameServerTwice(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 1)
	_, port, _ := strings.Cut(servers[0].Addr(), ":")
	addrs := servers[0].Addr() + ",localhost:" + port
	for _, driver := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		// A node timeout that a loaded machine's first connection does
		// not exhaust: the test is about the verdict, not the time.
		common := []string{"--wait", "0", "--ttl", "1m", "--node-timeout", "5s", "--driver", driver, "--nodes", addrs}
		for _, args := range [][]string{
			append(append([]string{"run"}, common...), "k-"+driver, "--", "echo", "ran"),
			append(append([]string{"run", "--conflict-exit-code", "0"}, common...), "k-"+driver, "--", "echo", "ran"),
			append(append([]string{"hold", "--for", "1ms"}, common...), "k-"+driver),
		} {
			r := invoke(t, "", args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "reach the same server") || r.stdout != "" {
				t.Errorf("redlock %s: want exit %d (as status exits), nothing on stdout, and that two addresses reach the same server, got %v",
					strings.Join(args, " "), exitUsage, r)
			}
		}
	}
}
