package redisserver

import (
	"fmt"
	"strconv"
	"strings"
)

// Option configures a server started by [Start].
type Option func(*config)

// config is what the options set. It is kept by the Server so that the same
// server can be started again with the same configuration.
type config struct {
	password   string
	directives [][]string // each: name, then values
	tls        *tlsSetup  // WithTLS; nil for plain TCP
	ipv6       bool       // WithIPv6: listen on ::1 rather than 127.0.0.1
	err        error      // first invalid option
}

// managed are the directives this package sets itself and WithConfig refuses.
var managed = map[string]string{
	"port":        "the port is picked by redistest",
	"bind":        "servers listen on 127.0.0.1, or on ::1 with WithIPv6",
	"dir":         "each server has its own temporary directory",
	"logfile":     "the log is kept in the server's directory",
	"daemonize":   "redistest must own the server process",
	"requirepass": "use WithPassword, so that Do and URL know the password",
	"tls-port":    "use WithTLS, which serves TLS on the port redistest picks",
	"include":     "an included file could set the directives above (a system redis.conf sets port 6379 and daemonize yes); give its directives with WithConfig",
}

// WithPassword sets the server's password (the requirepass directive). [Server.Do]
// authenticates with it and [Server.URL] includes it. An empty password means
// none.
func WithPassword(pw string) Option {
	return func(c *config) { c.password = pw }
}

// WithIPv6 makes the server listen on the IPv6 loopback address ::1 rather
// than on 127.0.0.1: its [Server.Addr] is "[::1]:PORT". Passed to a cluster
// through [WithServerOptions], it makes every node listen, meet the others and
// announce itself on ::1, so that CLUSTER NODES, CLUSTER SLOTS and MOVED
// replies name IPv6 addresses. [Start] fails if the machine has no ::1.
func WithIPv6() Option {
	return func(c *config) { c.ipv6 = true }
}

// host returns the loopback address the server listens on.
func (c *config) host() string {
	if c.ipv6 {
		return "::1"
	}
	return "127.0.0.1"
}

// WithConfig adds one configuration directive: its name, then its values, as
// in a redis.conf line. WithConfig("appendonly", "yes") passes
// "--appendonly yes" to redis-server, and WithConfig("save", "60", "1") passes
// "--save 60 1". Directives are applied after the defaults (including
// "save" "" and "appendonly" "no"), so they override them; use the option
// several times for several directives. The directives port, bind, dir,
// logfile, daemonize, requirepass and tls-port are managed by redistest and
// make [Start] fail, as do include (the file's directives could set them) and
// a value after the first that starts with "--", which redis-server would read
// as the name of another directive.
func WithConfig(directive ...string) Option {
	err := checkDirective(directive)
	var d []string // read-only once built: options may be applied concurrently
	if err == nil {
		d = append([]string{strings.TrimPrefix(directive[0], "--")}, directive[1:]...)
	}
	return func(c *config) {
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
		c.directives = append(c.directives, d)
	}
}

func checkDirective(d []string) error {
	if len(d) == 0 || strings.TrimPrefix(d[0], "--") == "" {
		return fmt.Errorf("redistest: WithConfig needs a directive name")
	}
	name := strings.TrimPrefix(d[0], "--")
	if strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' }) {
		return fmt.Errorf("redistest: WithConfig: directive name %q contains a space; pass the name and each value as separate arguments, e.g. WithConfig(\"appendonly\", \"yes\")", name)
	}
	if why, ok := managed[strings.ToLower(name)]; ok {
		return fmt.Errorf("redistest: WithConfig cannot set %q: %s", name, why)
	}
	for _, v := range d[min(2, len(d)):] {
		// After a directive's first value, redis-server reads such an
		// argument as the next directive's name, which would set a managed
		// directive (--port, --bind) past the check above. (It takes the
		// first value as it is: WithPassword("--pw") gives requirepass
		// "--pw".)
		if strings.HasPrefix(v, "--") {
			return fmt.Errorf("redistest: WithConfig(%q, ...): value %q starts with \"--\", which redis-server reads after a first value as the next directive's name; give each directive its own WithConfig", name, v)
		}
	}
	return nil
}

// args returns the redis-server command line (without the binary) for a
// server on port with directory dir.
func (c *config) args(port int, dir, logfile string) []string {
	args := append(c.portArgs(port),
		"--bind", c.host(),
		"--dir", dir,
		"--logfile", logfile,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "no",
	)
	if c.password != "" {
		args = append(args, "--requirepass", c.password)
	}
	for _, d := range c.directives {
		args = append(args, "--"+d[0])
		args = append(args, d[1:]...)
	}
	return args
}

// busPort returns the cluster bus port of a server on port started with c,
// and whether it has one (cluster-enabled yes): the cluster-port directive,
// or, as redis-server does when it is absent or 0, 10000 more than the
// server's plain TCP port (its TLS port with tls-cluster yes). A server
// started WithTLS has no plain TCP port (port 0).
func (c *config) busPort(port int) (int, bool) {
	enabled, tlsCluster, bus := false, false, 0
	for _, d := range c.directives { // the last of a directive wins, as on redis-server's command line
		if len(d) != 2 {
			continue
		}
		switch strings.ToLower(d[0]) {
		case "cluster-enabled":
			enabled = strings.EqualFold(d[1], "yes")
		case "tls-cluster":
			tlsCluster = strings.EqualFold(d[1], "yes")
		case "cluster-port":
			bus, _ = strconv.Atoi(d[1])
		}
	}
	if !enabled {
		return 0, false
	}
	if bus <= 0 {
		if c.tls != nil && !tlsCluster {
			port = 0
		}
		bus = port + 10000
	}
	return bus, bus <= 65535
}
