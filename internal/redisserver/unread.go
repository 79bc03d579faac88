package redisserver

import "fmt"

// Unread returns how many bytes clients have sent the server that its
// process has not read yet, on connections it has accepted or not, and on
// those the clients have closed since: the requests queued while it is
// paused, which it will still execute when resumed. It reads /proc/net/tcp
// (/proc/net/tcp6 for a server started [WithIPv6]) and is supported on Linux
// only.
func (s *Server) Unread() (int, error) {
	n, err := unread(s.cfg.ipv6, s.port)
	if err != nil {
		return 0, fmt.Errorf("redistest: unread bytes of server %s: %w", s.addr, err)
	}
	return n, nil
}
