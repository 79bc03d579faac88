//go:build !unix

package redistest

import "testing"

// downAddrs is ClosedAddrs where a socket cannot be held bound without
// listening as on unix.
func downAddrs(tb testing.TB, n int) []string { return ClosedAddrs(tb, n) }
