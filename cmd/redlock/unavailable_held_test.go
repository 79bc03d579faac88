//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestRunUnavailableKeyHeldOnOthers: of five nodes, two hold the key for
// another (they refuse at once), one is down (its port closed) and two are
// paused (SIGSTOP: they answer nothing). Three of five failed, so no quorum
// was possible even had the holder's nodes agreed: the README's exit 69
// ("too many nodes failed (errors, timeouts) for a quorum to be possible
// ...; for --wait past 0, the verdict of the last attempt that finished"),
// not 75 (held elsewhere). With --wait 1s, the wait ended while an attempt
// waited for the paused nodes' timeouts, and that cut attempt's partial
// votes ("2 refused, 1 failed") were the verdict: exit 75. (--wait 0 exits
// 69 on these nodes before and after; it takes a few seconds, Connect
// waiting for the paused nodes up to connectTimeout, so it is not run here.)
func TestRunUnavailableKeyHeldOnOthers(t *testing.T) {
	t.Parallel()
	servers, _ := nodes(t, 4)
	held, paused := servers[:2], servers[2:]
	for _, s := range held {
		if _, err := s.Do(t.Context(), "SET", "busy", "another's", "PX", "600000"); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range paused {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Resume() })
	}
	addrs := strings.Join([]string{held[0].Addr(), redistest.DownAddrs(t, 1)[0], held[1].Addr(), paused[0].Addr(), paused[1].Addr()}, ",")
	for _, d := range []string{"goredis", "redigo", "rueidis", "valkeygo"} {
		r := invoke(t, "", "run", "--driver", d, "--nodes", addrs, "--node-timeout", "300ms", "--wait", "1s", "busy", "--", "true")
		if r.code != exitUnavailable || !strings.Contains(r.stderr, "too many nodes failed") {
			t.Errorf("run --driver %s --wait 1s, key held on 2 of 5 nodes, 1 down, 2 paused: want exit %d, got %v", d, exitUnavailable, r)
		}
	}
}
