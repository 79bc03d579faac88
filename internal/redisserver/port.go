package redisserver

import (
	"fmt"
	"net"
)

// freePort returns a TCP port on host (a loopback address) that was free a
// moment ago. It is never 6379, so that tests never touch a developer's own
// Redis.
func freePort(host string) (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		if port != 6379 {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: find a free port: the kernel keeps handing out 6379")
}
