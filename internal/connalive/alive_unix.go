//go:build unix

package connalive

import (
	"errors"
	"net"
	"syscall"
)

// Alive reports whether conn, idle, is still open at both ends: a read that
// does not block finds nothing to read. A closed connection, one the server
// closed (end of file) or reset, and one with unsolicited bytes waiting (a
// reply to nothing) are not. A connection whose socket cannot be reached
// (an unknown wrapper) is taken as alive. A byte read is lost: the caller
// drops a connection that is not alive.
func Alive(conn net.Conn) bool {
	for {
		u, ok := conn.(interface{ NetConn() net.Conn }) // *tls.Conn
		if !ok {
			break
		}
		conn = u.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		_, rerr := syscall.Read(int(fd), b[:])
		ok = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // never wait for the socket to become readable
	})
	return err == nil && ok
}
