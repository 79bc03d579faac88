package redisserver

// Addrs returns the addresses of servers (or of proxies), in order.
func Addrs[S interface{ Addr() string }](servers []S) []string {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return addrs
}
