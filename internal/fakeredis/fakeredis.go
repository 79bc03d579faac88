// Package fakeredis serves, on a loopback port, a scripted stand-in for a
// Redis server, for the tests that need a server that a redis-server cannot
// be made to be: one that trickles its replies, a cluster seed that gives a
// stale slot map. Tests that mean Redis use package redistest.
package fakeredis

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// Serve listens on a free loopback port and, on every connection, reads
// commands (RESP arrays of bulk strings) and writes for each the reply that
// reply returns for its arguments, as raw RESP (":1\r\n", "-ERR ...\r\n"),
// until the client closes the connection or the test ends. reply is called
// on the connection's goroutine: a reply that sleeps delays that
// connection's later replies. Serve returns the address.
func Serve(t testing.TB, reply func(args []string) string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					args, ok := readCommand(r)
					if !ok {
						return
					}
					if _, err := c.Write([]byte(reply(args))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// readCommand reads one command: *N, then N times $len and the argument
// (which may hold any bytes, line ends included). It returns false at the
// connection's end or on anything else.
func readCommand(r *bufio.Reader) ([]string, bool) {
	n, ok := readLength(r, '*')
	if !ok {
		return nil, false
	}
	args := make([]string, 0, min(n, 64))
	for range n {
		size, ok := readLength(r, '$')
		if !ok {
			return nil, false
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(r, arg); err != nil || string(arg[size:]) != "\r\n" {
			return nil, false
		}
		args = append(args, string(arg[:size]))
	}
	return args, true
}

// readLength reads a line of kind ("*3\r\n", "$5\r\n") and returns its
// number.
func readLength(r *bufio.Reader, kind byte) (int, bool) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 || line[0] != kind || !strings.HasSuffix(line, "\r\n") {
		return 0, false
	}
	n, err := strconv.Atoi(line[1 : len(line)-2])
	return n, err == nil && n >= 0 && n <= 512<<20
}
