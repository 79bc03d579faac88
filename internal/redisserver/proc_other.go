//go:build !linux

package redisserver

import (
	"errors"
)

// waitStopped would wait until the process is stopped; without /proc the
// signal is trusted to take effect at once.
func waitStopped(pid int) error { return nil }

// unread is not implemented without /proc.
func unread(ipv6 bool, port int) (int, error) {
	return 0, errors.New("not supported on this OS")
}
