//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// TestRunStopsAtRefusalsBesideNodeDown runs run as an ACL user that may not
// touch the key, on three nodes of which one is down (its port closed: the
// connection is refused at once: redistest.DownAddrs) and one far (its replies 50ms late, through
// a proxy). The down node's error and the near node's NOPERM decided each
// attempt before the far node's NOPERM came, so run waited until --wait
// ended and exited 69, "too many nodes failed for a quorum", with --wait 0
// too, though the nodes refuse the user, which run's help gives 1. Since
// c510a16 an attempt waits for that refusal: run exits 1 at once, naming
// NOPERM, whatever --wait.
//
// The far node's refusal counts only if it comes within the node timeout:
// an attempt waits that long for the replies still out (waitVerdict), and
// a node slower than that counts as failed, which is no refusal. So
// --node-timeout is 2s, well above the proxy's 50ms on a loaded machine:
// with the default (200ms), --wait 0 exited 69 in 2 of 120 runs with -race
// under a load of about 10, the far node's reply not in by then.
func TestRunStopsAtRefusalsBesideNodeDown(t *testing.T) {
	t.Parallel()
	const password = "nokey-Passw0rd"
	servers, _ := nodes(t, 2)
	urls := setUser(t, servers, "nokey", password, "resetkeys", "~other:*")
	far := testproxy.New(t, servers[1].Addr(), testproxy.ReplyDelay(50*time.Millisecond))
	urls = []string{
		"redis://nokey:" + password + "@" + redistest.DownAddrs(t, 1)[0],
		urls[0],
		strings.Replace(urls[1], servers[1].Addr(), far.Addr(), 1),
	}
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		for _, wait := range []string{"10s", "0"} {
			r := invoke(t, "", "run", "--driver", d, "--wait", wait, "--node-timeout", "2s", "--nodes", strings.Join(urls, ","), "k-"+d, "--", "true")
			if r.code != exitFailure || !strings.Contains(r.stderr, "the nodes answer an error that retrying cannot fix") ||
				!strings.Contains(r.stderr, "2 answered NOPERM, which retrying cannot fix") {
				t.Errorf("run --driver %s --wait %s as a user the nodes refuse, one node down: want exit 1 at once, naming NOPERM, got %v", d, wait, r)
			}
			if strings.Contains(r.stdout+r.stderr, password) {
				t.Errorf("run printed the password:\n%v", r)
			}
		}
	}
}
