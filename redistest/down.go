package redistest

import "testing"

// DownAddrs returns n distinct loopback addresses ("127.0.0.1:port") that
// refuse connections for the rest of the test: nodes that are down and stay
// down. Where it can (on unix), each port is held until the test ends by a
// socket bound to it that never listens, so a connection to it is refused at
// once and no server started meanwhile, by this test binary or by another,
// can take the port; elsewhere they are ClosedAddrs'. Use ClosedAddrs when
// the test later listens on the address itself (a node that comes back).
// It fails the test if it cannot bind, or if n is negative.
func DownAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	if n < 0 {
		tb.Fatalf("redistest: DownAddrs: n = %d < 0", n)
		return nil
	}
	return downAddrs(tb, n)
}
