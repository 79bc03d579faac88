//go:build unix

package redistest

import (
	"strconv"
	"syscall"
	"testing"
)

// downAddrs binds n sockets to loopback ports the system chooses, without
// listening, and closes them when the test ends. The sockets do not set
// SO_REUSEADDR, so a listener's bind to one of their ports fails (Linux
// lets two sockets share a port only when both set it and neither
// listens), and the system never gives their ports to an outgoing
// connection.
func downAddrs(tb testing.TB, n int) []string {
	addrs := make([]string, 0, n)
	for range n {
		syscall.ForkLock.RLock() // no process started meanwhile inherits it
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.CloseOnExec(fd)
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			tb.Fatalf("redistest: DownAddrs: socket: %v", err)
			return nil
		}
		tb.Cleanup(func() { syscall.Close(fd) })
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			tb.Fatalf("redistest: DownAddrs: bind: %v", err)
			return nil
		}
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			tb.Fatalf("redistest: DownAddrs: getsockname: %v", err)
			return nil
		}
		sa4, ok := sa.(*syscall.SockaddrInet4)
		if !ok {
			tb.Fatalf("redistest: DownAddrs: bound to %T, not an IPv4 address", sa)
			return nil
		}
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(sa4.Port))
	}
	return addrs
}
