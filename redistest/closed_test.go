package redistest_test

import (
	"net"
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
