// Package redisaddr parses the node addresses every Redis driver accepts:
// "host:port", "redis://[user:password@]host:port[/db]" and the same with
// "rediss://" for TLS, whose query parameters tls_ca_file, tls_cert_file,
// tls_key_file and tls_server_name configure it (an empty one is left out).
//
// A node may also be a whole Redis Cluster: "redis://host:port?cluster=true"
// (or rediss://), with more seed addresses as repeated addr=host:port query
// parameters, the convention of go-redis's ParseClusterURL:
// "redis://:pw@10.0.0.1:6379?cluster=true&addr=10.0.0.2:6379&addr=10.0.0.3:6379".
// [ParseNode] accepts both kinds; [Parse] only single servers.
//
// Its errors and String never contain a password.
package redisaddr

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ClusterSeedsHint tells how the seeds of one Redis Cluster are written:
// in one address. The errors that find one cluster given as two nodes end
// with it.
const ClusterSeedsHint = "the seeds of one Redis Cluster are one node, given in one address: redis://host:port?cluster=true&addr=host2:port2"

// ErrSameCluster is matched (errors.Is) by the library's error of two nodes
// that reach one Redis Cluster (one that matches redlock.ErrSameServer and
// ends with ClusterSeedsHint), so that the command can add to that hint
// without reading the error's text. It is never returned itself.
var ErrSameCluster = errors.New("two nodes reach one Redis Cluster")

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
	u := a.redactedURL()
	if a.DB != 0 {
		u.Path = "/" + strconv.Itoa(a.DB)
	}
	return u.String()
}

// redactedURL is a's scheme, user and host as a URL, the password replaced by
// "xxxxx".
func (a Addr) redactedURL() url.URL {
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
	return u
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
// missing port means DefaultPort. It refuses a cluster address
// (cluster=true), which [ParseNode] accepts.
func Parse(s string) (Addr, error) {
	n, err := ParseNode(s)
	if err != nil {
		return Addr{}, err
	}
	if n.Cluster {
		return Addr{}, &Error{Addr: Redact(s), Reason: "cluster=true names a Redis Cluster, which is not accepted here"}
	}
	return n.Addr, nil
}

// Node is a parsed node address: one server, or a Redis Cluster reached
// through seed addresses.
type Node struct {
	// Addr is the address's host and port (the first seed of a cluster),
	// with the credentials, database and TLS settings, which a cluster's
	// seeds and the nodes found through them share.
	Addr
	// Cluster is true for a cluster address (cluster=true).
	Cluster bool
	// Seeds are the "host:port" addresses to reach the node through:
	// Addr.HostPort(), then those of the addr query parameters in order.
	// A single server has only Addr.HostPort().
	Seeds []string
}

// String returns the address with the password replaced by "xxxxx", fit for
// errors and logs: as Addr.String for a single server, and for a cluster a
// URL with cluster=true and an addr parameter for every seed after the first.
func (n Node) String() string {
	if !n.Cluster {
		return n.Addr.String()
	}
	u := n.redactedURL()
	q := []string{"cluster=true"}
	for _, seed := range n.Seeds[min(1, len(n.Seeds)):] {
		q = append(q, "addr="+seed) // seedHostRune: nothing to escape
	}
	u.RawQuery = strings.Join(q, "&")
	return u.String()
}

// ParseNode parses a node address: "host:port",
// "redis://[user:password@]host:port[/db]" (or rediss://) for one server,
// and "redis://[user:password@]host:port[/0]?cluster=true[&addr=host:port...]"
// (or rediss://) for a Redis Cluster, whose seeds are the URL's host and
// those of the addr parameters (each given once; a missing port means
// DefaultPort, as for the URL's host). cluster takes the values
// strconv.ParseBool accepts ("true", "1", "false", ...); addr needs
// cluster=true. A cluster has only database 0.
func ParseNode(s string) (Node, error) {
	fail := func(reason string) (Node, error) {
		return Node{}, &Error{Addr: Redact(s), Reason: reason}
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
		if reason := schemeTypo(s); reason != "" {
			return fail(reason)
		}
		host, port, err := splitHostPort(s)
		if err != nil {
			return fail(err.Error())
		}
		a := Addr{Host: host, Port: port}
		return Node{Addr: a, Seeds: []string{a.HostPort()}}, nil
	}
	// A password with a character that a URL reserves breaks the URL
	// apart (a generated one often has some): say so where that can be the
	// cause, since the address is shown with the password masked.
	encode := ""
	if _, rest, _ := strings.Cut(s, "://"); strings.Contains(rest, "@") {
		encode = "; if the user name or password has / ? # % or another character a URL reserves, percent-encode it (/ as %2F, ? %3F, # %23, % %25, @ %40, : %3A)"
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's errors quote the whole input, password included: never pass them on.
		return fail("not a valid URL" + encode)
	}
	var n Node
	a := &n.Addr
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
		return fail("fragments are not supported" + encode)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("malformed query")
	}
	// A query with the user information's '@' in it names no parameter in
	// an error: the names may be the end of a password (see userInQuery).
	hideNames := userInQuery(u.RawQuery)
	var seeds []string // of the addr parameters
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vals := q[name]
		if name == "addr" {
			seeds = vals
			continue
		}
		if len(vals) != 1 {
			if hideNames {
				return fail(fmt.Sprintf("a query parameter given %d times%s", len(vals), encode))
			}
			return fail(fmt.Sprintf("query parameter %q given %d times", name, len(vals)))
		}
		v := vals[0]
		switch name {
		case "cluster":
			if n.Cluster, err = strconv.ParseBool(v); err != nil {
				return fail("cluster must be true or false")
			}
			continue
		case "tls_ca_file":
			a.TLSCAFile = v
		case "tls_cert_file":
			a.TLSCertFile = v
		case "tls_key_file":
			a.TLSKeyFile = v
		case "tls_server_name":
			a.TLSServerName = v
		default:
			if hideNames {
				return fail(fmt.Sprintf("unknown query parameter (known: %s)%s", strings.Join(knownParamNames, ", "), encode))
			}
			reason := fmt.Sprintf("unknown query parameter %q (known: %s)", name, strings.Join(knownParamNames, ", "))
			switch strings.ToLower(name) {
			case "password", "pass", "passwd", "user", "username", "auth", "requirepass":
				reason += "; a user and password go in the URL: redis://user:password@host:port"
			case "db":
				reason += "; the database goes in the path: redis://host:port/2"
			}
			return fail(reason)
		}
		if !a.TLS && v != "" { // empty is left out, as on rediss://
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
		if a.Username != "" && a.Password == "" {
			// go-redis and redigo would log in as the default user, and
			// rueidis and valkey-go as this one: one address, two users.
			return fail("a user name needs a password: Redis logs in with AUTH user password (a nopass user takes any password)")
		}
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 || db > 1<<20 {
			return fail("the path must be a database number, such as /0" + encode)
		}
		a.DB = db
	}
	n.Seeds = []string{a.HostPort()}
	if !n.Cluster {
		if len(seeds) > 0 {
			return fail("query parameter \"addr\" names more seeds of a cluster: it needs cluster=true")
		}
		return n, nil
	}
	if a.DB != 0 {
		return fail(fmt.Sprintf("a Redis Cluster has only database 0, not %d", a.DB))
	}
	// From here on the URL's host, path and query parameters but addr are
	// known good: its errors show the URL as url.Parse read it, with the
	// user information masked, its own and any of an addr parameter, but
	// not, as Redact would, everything up to an addr's '@', the URL's host
	// included.
	fail = func(reason string) (Node, error) {
		return Node{}, &Error{Addr: redactSeeds(u), Reason: reason}
	}
	for i, seed := range seeds {
		if strings.Contains(seed, "://") {
			// Before the colons are read: "redis://h:2" is no IPv6
			// address, nor host "redis" and port "//h:2".
			return fail(fmt.Sprintf("addr parameter %d: want host:port, not a URL (every seed takes the scheme, credentials and TLS parameters of the node's URL)", i+1))
		}
		if strings.Contains(seed, "@") {
			return fail(fmt.Sprintf("addr parameter %d: want host:port, without credentials (the URL's apply to every seed)", i+1))
		}
		host, port, err := splitHostPort(seed)
		if err != nil {
			return fail(fmt.Sprintf("addr parameter %d: %v", i+1, err))
		}
		if strings.ContainsFunc(host, func(r rune) bool { return !seedHostRune(r) }) {
			return fail(fmt.Sprintf("addr parameter %d: the host may have only letters, digits, '.', '-', '_' and, in brackets, ':'", i+1))
		}
		hp := net.JoinHostPort(host, port)
		if slices.Contains(n.Seeds, hp) {
			return fail(fmt.Sprintf("seed %s given twice", hp))
		}
		n.Seeds = append(n.Seeds, hp)
	}
	return n, nil
}

// userInQuery reports whether rawQuery, a URL's query, has an '@' outside
// the value of an addr parameter (a cluster seed's user information, which
// ParseNode refuses by name): the user information's '@' of an address
// whose password has a '?' that was not percent-encoded ("redis://u:12?34@h:1"),
// where url.Parse ends the host and begins the query. Its parameters' names
// and values may then be the end of the password, which Redact hides.
func userInQuery(rawQuery string) bool {
	for _, p := range strings.Split(rawQuery, "&") {
		if name, _, _ := strings.Cut(p, "="); name != "addr" && strings.Contains(p, "@") {
			return true
		}
	}
	return false
}

// schemeTypo explains an address without "://" that is not host:port but a
// URL with a mistyped scheme separator ("redis:/h:p", "rediss//h:p") or a
// Unix socket's path; "" for anything else.
func schemeTypo(s string) string {
	lower := strings.ToLower(s)
	for _, scheme := range []string{"rediss", "redis"} {
		if rest, ok := strings.CutPrefix(lower, scheme); ok && (strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "/")) {
			if strings.HasPrefix(rest, ":") && !strings.HasPrefix(rest, ":/") && strings.Count(s, ":") == 1 {
				return "" // a host named redis, and its port: "redis:6379"
			}
			return fmt.Sprintf("want %s://host:port", scheme)
		}
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "unix:") {
		return "Unix sockets are not supported: want host:port or redis://host:port"
	}
	return ""
}

// seedHostRune reports whether r may appear in the host of an addr
// parameter: a host name, an IPv4 address, or an IPv6 address (its brackets
// removed), and nothing that would need escaping in a URL's query.
func seedHostRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-_:", r)
}

func splitHostPort(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("no host")
	}
	if strings.Contains(s, "@") {
		// Before the colons are read: those of "user:password@host:port"
		// are no IPv6 address's, nor a port.
		return "", "", errors.New("the host has '@' in it (a user name or password goes in a redis:// URL)")
	}
	host, port = s, DefaultPort
	if inner, ok := strings.CutPrefix(s, "["); ok && strings.HasSuffix(inner, "]") && !strings.ContainsAny(inner[:len(inner)-1], "[]") {
		// A bracketed IPv6 address without a port: "[::1]".
		host = inner[:len(inner)-1]
	} else if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if host, port, err = net.SplitHostPort(s); err != nil {
			return "", "", errors.New("want host:port, with brackets around an IPv6 address")
		}
	} else if strings.Contains(s, ":") {
		return "", "", errors.New("an IPv6 address needs brackets: [::1]:6379")
	}
	switch {
	case host == "":
		return "", "", errors.New("no host")
	case strings.ContainsAny(host, "@/?#"):
		return "", "", errors.New("the host has '@', '/', '?' or '#' in it (a user name or password goes in a redis:// URL)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return host, strconv.Itoa(n), nil
}

// Redact returns s with the user information of an address removed, for
// messages about an address that may not parse: everything up to its last
// '@' (after the scheme, if it begins with one: letters, digits, '+', '-'
// or '.' before "://"). A malformed address may have a
// password with '/', '?' or '#' in it, which a URL's user information cannot
// hold; so an '@' in a path or query hides more than needed, never less.
// The values of query parameters other than the known ones (cluster, addr,
// tls_*), which hold no secret, are replaced too: some clients take a
// password as ?password=..., which this package refuses, naming it.
func Redact(s string) string {
	scheme, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 && isScheme(s[:i]) {
		scheme, rest = s[:i+3], s[i+3:]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		inQuery := strings.Contains(rest[:at], "?")
		rest = "xxxxx@" + rest[at+1:]
		if host, params, ok := strings.Cut(rest, "&"); ok && inQuery && !strings.Contains(rest, "?") {
			// The '@' was in a query parameter's value (an addr's
			// credentials): the parameters after it are the query's
			// still, their values masked as theirs.
			rest = host + "&" + strings.TrimPrefix(redactQuery("?"+params), "?")
		}
	}
	return shorten(scheme + redactQuery(rest))
}

// MaskName returns the name of a node, its String, fit for messages: as it
// is when it holds no password, as the names of this module's drivers
// (redis://user:xxxxx@host:port, the password already masked); for a URL
// with another password in its user information, the same URL with the
// password replaced by "xxxxx" (a user information without ':' all of it,
// as redis-cli -u and redigo's DialURL take it for a password), and so for a
// password in its query: the
// value of a parameter other than the known ones (some clients take
// ?password=...), and the user information of an addr parameter (a cluster
// seed's) unless its password is "xxxxx" already; for a name with an '@'
// that is no such URL (u:pw@host:port), or that is a URL with an '@' in its
// path, fragment, or query but in an addr parameter (a password with a '/',
// '#' or '?' ended its host: redis://u:12?34@host:port), Redact's. A driver of another
// module may name its nodes by their address as given, password included.
func MaskName(name string) string {
	if !strings.ContainsAny(name, "@?") {
		return name
	}
	u, err := url.Parse(name)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return Redact(name)
	}
	if userInQuery(u.RawQuery) || strings.Contains(u.Path, "@") || strings.Contains(u.Fragment, "@") {
		// Redact hides everything up to the last '@'; what follows it
		// may make no host ("a://0?@ 0"): then the scheme alone.
		if r, err := url.Parse(Redact(name)); err == nil && r.Host != "" {
			return r.String()
		}
		return u.Scheme + "://xxxxx@"
	}
	masked := false
	if u.User != nil {
		switch pw, set := u.User.Password(); {
		case set && pw != "xxxxx":
			u.User, masked = url.UserPassword(u.User.Username(), "xxxxx"), true
		case !set && u.User.Username() != "xxxxx":
			// A user information without ':' is a password to redis-cli
			// -u and to redigo's DialURL, as to Redact.
			u.User, masked = url.User("xxxxx"), true
		}
	}
	if q := maskQuery(u.RawQuery); q != u.RawQuery {
		u.RawQuery, masked = q, true
	}
	if !masked {
		return name
	}
	return u.String()
}

// maskQuery is redactQuery's rule (redactParam) for a node's name: the
// query parameters of query that may hold a password masked, but an addr
// whose user information shows its password masked already ("u:xxxxx@host",
// as this module's names have it: the password, after the first ':', is
// xxxxx, not only its end) left as it is.
func maskQuery(query string) string {
	if query == "" {
		return query
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		if v, ok := strings.CutPrefix(p, "addr="); ok {
			if at := strings.LastIndex(v, "@"); at >= 0 {
				if _, pw, ok := strings.Cut(v[:at], ":"); ok && pw == "xxxxx" {
					continue
				}
			}
		}
		params[i] = redactParam(p)
	}
	return strings.Join(params, "&")
}

// isScheme reports whether s is a URL scheme as RFC 3986 has it (a letter,
// then letters, digits, '+', '-' or '.'): what comes before a "://" that is
// not one, such as "u:pw@h:1 redis" of an address given with white space
// before another, is user information and a host, which Redact must hide.
func isScheme(s string) bool {
	for i, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && ('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// maxShown is how much of an address an error shows: the rest is cut off,
// with "...".
const maxShown = 256

// shorten returns s cut to maxShown bytes, with "..." when it was longer.
func shorten(s string) string {
	if len(s) > maxShown {
		return s[:maxShown] + "..."
	}
	return s
}

// redactSeeds returns the address that url.Parse read as u, whose host,
// path and query parameters other than addr ParseNode found good, with its
// user information replaced by "xxxxx", and that of every addr parameter
// (see redactQuery).
func redactSeeds(u *url.URL) string {
	out := u.Scheme + "://"
	if u.User != nil {
		out += "xxxxx@"
	}
	out += u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += redactQuery("?" + u.RawQuery)
	}
	return shorten(out)
}

// knownParamNames are the query parameters Parse takes, in the order its
// error for an unknown one lists them; they hold no secret.
var knownParamNames = []string{"cluster", "addr", "tls_ca_file", "tls_cert_file", "tls_key_file", "tls_server_name"}

// knownParams are the query parameters whose values Redact shows: those of
// knownParamNames.
var knownParams = func() map[string]bool {
	m := make(map[string]bool, len(knownParamNames))
	for _, name := range knownParamNames {
		m[name] = true
	}
	return m
}()

// redactQuery replaces with "xxxxx" the value of every query parameter of
// rest, an address without its scheme, that is not one of knownParams (a
// fragment counts as part of the last value), and an addr parameter's value
// up to its last '@' (or "%40"): user information, which ParseNode refuses
// there.
func redactQuery(rest string) string {
	before, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		params[i] = redactParam(p)
	}
	return before + "?" + strings.Join(params, "&")
}

// redactParam is redactQuery's rule for one query parameter p, "name=value".
func redactParam(p string) string {
	name, value, hasValue := strings.Cut(p, "=")
	switch {
	case hasValue && !knownParams[name]:
		return name + "=xxxxx"
	case name == "addr":
		at := strings.LastIndex(value, "@") + 1 // where the host begins
		if pct := strings.LastIndex(strings.ToLower(value), "%40"); pct >= 0 {
			at = max(at, pct+3)
		}
		if at > 0 {
			return "addr=xxxxx@" + value[at:]
		}
	}
	return p
}
