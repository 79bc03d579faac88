package redistest

import (
	"net"
	"testing"
)

// ClosedAddrs returns n distinct loopback addresses ("127.0.0.1:port") on
// which nothing listens: nodes that are down, for tests of how a client
// fails to connect (connection refused). The ports are ones the system gave
// to listeners held open until all n were taken, then closed, so that no
// two are the same; nothing else on the machine is then listening on them,
// though a later listener may take one again. It fails the test if it
// cannot listen, or if n is negative.
func ClosedAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	if n < 0 {
		tb.Fatalf("redistest: ClosedAddrs: n = %d < 0", n)
		return nil
	}
	addrs := make([]string, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("redistest: ClosedAddrs: %v", err)
			return nil
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}
