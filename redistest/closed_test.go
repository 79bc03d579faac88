package redistest_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redistest"
)

// ClosedAddrs gives distinct addresses that refuse connections.
func TestClosedAddrs(t *testing.T) {
	addrs := redistest.ClosedAddrs(t, 8)
	if len(addrs) != 8 {
		t.Fatalf("got %d addresses, want 8", len(addrs))
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Errorf("%s given twice in %v", a, addrs)
		}
		seen[a] = true
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s accepted a connection; want nothing listening", a)
		}
	}
}

// A negative count fails the test with a clear message, as NewServers's and
// NewClusters's do, rather than panicking in make.
func TestNegativeCount(t *testing.T) {
	tb := runFake(func(tb testing.TB) { redistest.ClosedAddrs(tb, -1) })
	if !tb.failed || !strings.Contains(tb.msg, "ClosedAddrs") || !strings.Contains(tb.msg, "-1") {
		t.Errorf("ClosedAddrs(tb, -1): failed=%v msg=%q; want a failure naming ClosedAddrs and n", tb.failed, tb.msg)
	}
	if testing.Short() {
		return // NewServers and NewClusters skip under -short before they look at n
	}
	for name, fn := range map[string]func(testing.TB){
		"NewServers":  func(tb testing.TB) { redistest.NewServers(tb, -1) },
		"NewClusters": func(tb testing.TB) { redistest.NewClusters(tb, -1, 1) },
	} {
		tb := runFake(fn)
		if !tb.failed || !strings.Contains(tb.msg, name) || !strings.Contains(tb.msg, "-1") {
			t.Errorf("%s(tb, -1): failed=%v msg=%q; want a failure naming %s and n", name, tb.failed, tb.msg, name)
		}
	}
}
