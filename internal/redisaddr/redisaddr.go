// Package redisaddr parses the node addresses every Redis driver accepts:
// "host:port", "redis://[user:password@]host:port[/db]" and the same with
// "rediss://" for TLS, whose query parameters tls_ca_file, tls_cert_file,
// tls_key_file and tls_server_name configure it.
//
// Its errors and String never contain a password.
package redisaddr

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPort is used when an address names no port.
const DefaultPort = "6379"

// MaxLen is the longest address accepted, in bytes.
const MaxLen = 4096

// Addr is a parsed node address.
type Addr struct {
	Host     string // host name or IP address, without brackets
	Port     string // decimal port number
	Username string // ACL user name; empty for the default user
	Password string // password; empty for none
	DB       int    // logical database number

	TLS           bool   // rediss://: connect with TLS
	TLSCAFile     string // PEM file of the CAs that sign the server's certificate; default: the system's
	TLSCertFile   string // PEM file of the client certificate, for servers that require one
	TLSKeyFile    string // PEM file of the client certificate's key
	TLSServerName string // name to verify the server's certificate against; default: the host
}

// HostPort returns "host:port", with brackets around an IPv6 host.
func (a Addr) HostPort() string { return net.JoinHostPort(a.Host, a.Port) }

// String returns the address with the password replaced by "xxxxx", fit for
// errors and logs.
func (a Addr) String() string {
	if a.Username == "" && a.Password == "" && a.DB == 0 && !a.TLS {
		return a.HostPort()
	}
	u := url.URL{Scheme: "redis", Host: a.HostPort()}
	if a.TLS {
		u.Scheme = "rediss"
	}
	switch {
	case a.Password != "":
		u.User = url.UserPassword(a.Username, "xxxxx")
	case a.Username != "":
		u.User = url.User(a.Username)
	}
	if a.DB != 0 {
		u.Path = "/" + strconv.Itoa(a.DB)
	}
	return u.String()
}

// Error is returned for a malformed address. Its text names the address with
// any credentials removed.
type Error struct {
	Addr   string // the address, credentials removed
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("malformed redis address %q: %s", e.Addr, e.Reason)
}

// Parse parses "host:port" or "redis://[user:password@]host:port[/db]". A
// missing port means DefaultPort.
func Parse(s string) (Addr, error) {
	fail := func(reason string) (Addr, error) {
		return Addr{}, &Error{Addr: Redact(s), Reason: reason}
	}
	switch {
	case s == "":
		return fail("empty address")
	case len(s) > MaxLen:
		return fail(fmt.Sprintf("longer than %d bytes", MaxLen))
	case strings.ContainsAny(s, " \t\r\n\x00"):
		return fail("contains white space or a control character")
	}
	if !strings.Contains(s, "://") {
		host, port, err := splitHostPort(s)
		if err != nil {
			return fail(err.Error())
		}
		return Addr{Host: host, Port: port}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's errors quote the whole input, password included: never pass them on.
		return fail("not a valid URL")
	}
	var a Addr
	switch u.Scheme {
	case "redis":
	case "rediss":
		a.TLS = true
	default:
		return fail(fmt.Sprintf("unsupported scheme %q (want redis:// or rediss://)", u.Scheme))
	}
	if u.Opaque != "" {
		return fail("want redis://host:port")
	}
	if u.Fragment != "" {
		return fail("fragments are not supported")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("malformed query")
	}
	for name, vals := range q {
		if len(vals) != 1 {
			return fail(fmt.Sprintf("query parameter %q given %d times", name, len(vals)))
		}
		v := vals[0]
		switch name {
		case "tls_ca_file":
			a.TLSCAFile = v
		case "tls_cert_file":
			a.TLSCertFile = v
		case "tls_key_file":
			a.TLSKeyFile = v
		case "tls_server_name":
			a.TLSServerName = v
		default:
			return fail(fmt.Sprintf("unknown query parameter %q (known: tls_ca_file, tls_cert_file, tls_key_file, tls_server_name)", name))
		}
		if !a.TLS {
			return fail(fmt.Sprintf("query parameter %q needs rediss://", name))
		}
	}
	if (a.TLSCertFile == "") != (a.TLSKeyFile == "") {
		return fail("tls_cert_file and tls_key_file go together")
	}
	host, port, err := splitHostPort(u.Host)
	if err != nil {
		return fail(err.Error())
	}
	a.Host, a.Port = host, port
	if u.User != nil {
		a.Username = u.User.Username()
		a.Password, _ = u.User.Password()
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 || db > 1<<20 {
			return fail("the path must be a database number, such as /0")
		}
		a.DB = db
	}
	return a, nil
}

func splitHostPort(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("no host")
	}
	host, port = s, DefaultPort
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if host, port, err = net.SplitHostPort(s); err != nil {
			return "", "", errors.New("want host:port, with brackets around an IPv6 address")
		}
	} else if strings.Contains(s, ":") {
		return "", "", errors.New("an IPv6 address needs brackets: [::1]:6379")
	}
	if host == "" {
		return "", "", errors.New("no host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return host, strconv.Itoa(n), nil
}

// Redact returns s with the user information of a URL removed, for messages
// about an address that may not parse.
func Redact(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		if len(s) > 256 {
			return s[:256] + "..."
		}
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		rest = "xxxxx@" + rest[at+1:]
	}
	out := s[:i+3] + rest
	if len(out) > 256 {
		out = out[:256] + "..."
	}
	return out
}
