//go:build unix

package redistest_test

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// DownAddrs gives distinct addresses that refuse connections at once, and
// that no listener can take while the test runs.
func TestDownAddrs(t *testing.T) {
	addrs := redistest.DownAddrs(t, 4)
	if len(addrs) != 4 {
		t.Fatalf("got %d addresses, want 4", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Errorf("%s given twice in %v", a, addrs)
		}
		seen[a] = true
		c, err := net.DialTimeout("tcp", a, time.Second)
		if err == nil {
			c.Close()
			t.Errorf("%s accepted a connection; want it refused", a)
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dialing %s: %v; want connection refused", a, err)
		}
		// net.Listen sets SO_REUSEADDR, as redis-server does.
		if l, err := net.Listen("tcp", a); err == nil {
			l.Close()
			t.Errorf("a listener took %s, which must stay down for the test", a)
		}
	}
}

func TestDownAddrsNegativeCount(t *testing.T) {
	tb := runFake(func(tb testing.TB) { redistest.DownAddrs(tb, -1) })
	if !tb.failed || !strings.Contains(tb.msg, "DownAddrs") || !strings.Contains(tb.msg, "-1") {
		t.Errorf("DownAddrs(tb, -1): failed=%v msg=%q; want a failure naming DownAddrs and n", tb.failed, tb.msg)
	}
}
