package redisaddr

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Addr
		str  string
	}{
		{"127.0.0.1:6380", Addr{Host: "127.0.0.1", Port: "6380"}, "127.0.0.1:6380"},
		{"localhost", Addr{Host: "localhost", Port: "6379"}, "localhost:6379"},
		{"[::1]:7000", Addr{Host: "::1", Port: "7000"}, "[::1]:7000"},
		{"redis://127.0.0.1:7000", Addr{Host: "127.0.0.1", Port: "7000"}, "127.0.0.1:7000"},
		{"redis://127.0.0.1", Addr{Host: "127.0.0.1", Port: "6379"}, "127.0.0.1:6379"},
		{"redis://:s3cret@h:1/2", Addr{Host: "h", Port: "1", Password: "s3cret", DB: 2}, "redis://:xxxxx@h:1/2"},
		{"redis://alice:s3cret@h:1", Addr{Host: "h", Port: "1", Username: "alice", Password: "s3cret"}, "redis://alice:xxxxx@h:1"},
		{"rediss://:s3cret@h:1", Addr{Host: "h", Port: "1", Password: "s3cret", TLS: true}, "rediss://:xxxxx@h:1"},
		{"rediss://h:1?tls_ca_file=/ca.pem&tls_server_name=redis.internal&tls_cert_file=c.pem&tls_key_file=k.pem",
			Addr{Host: "h", Port: "1", TLS: true, TLSCAFile: "/ca.pem", TLSServerName: "redis.internal", TLSCertFile: "c.pem", TLSKeyFile: "k.pem"},
			"rediss://h:1"},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q) error %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}
}

func TestParseErrorsHidePasswords(t *testing.T) {
	for _, in := range []string{
		"", "h:0", "h:70000", "h:port", ":6379", "::1", "redis://", "http://h:1",
		"redis://u:s3cret@h:1/x", "redis://u:s3cret@h:1?db=1", "redis://u:s3cret@h:99999",
		"redis://u:s3cret@[::1", "redis://u:s3cret@h:1/-1", "h 1",
		"redis://u:s3cret@h:1?tls_ca_file=x", "rediss://u:s3cret@h:1?tls_cert_file=c", "rediss://u:s3cret@h:1?nope=1",
		"rediss://u:s3cret@h:1?tls_ca_file=a&tls_ca_file=b", "rediss://u:s3cret@h:1#frag",
		// Clusters: Parse takes single servers only.
		"redis://u:s3cret@h:1?cluster=true", "rediss://u:s3cret@h:1?cluster=true&addr=h:2",
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) error %q contains the password", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1:6379", "redis://u:p@h:1/2", "[::1]:1", "redis://u:p@[::1]:2/0",
		"redis://u:p4ss@h:1?cluster=true&addr=h:2&addr=[::1]:3", "rediss://:p4ss@h:1/0?cluster=1&addr=h2&tls_server_name=x",
		"redis://h:1?cluster=false", "redis://h:1?addr=h:2", "redis://h:1/3?cluster=true",
		"u:p4ss@h:1 redis://h2:2", "redis://h:1?cluster=true&addr=u:p4ss@h2:2&password=p4ss", "redis://p4ss@h:1/2",
		"redis://u:12?p4ss@h:1", "redis://u:12/p4ss@h:1", "redis://u:12#p4ss@h:1", "redis://:s@0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Redact masks everything up to the last '@', but a scheme:
		// nothing of the user information shows, whatever follows it.
		if strings.Contains(s, "@") && len(s) < maxShown {
			r := Redact(s)
			i := strings.Index(r, "xxxxx@")
			if i < 0 || (i > 0 && (!strings.HasSuffix(r[:i], "://") || !isScheme(r[:i-len("://")]))) {
				t.Errorf("Redact(%q) = %q: the user information shows", s, r)
			}
		}
		// MaskName leaves no password but "xxxxx" in a URL's user
		// information, nor a value but "xxxxx" in a query parameter
		// that may hold one.
		if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
			m := MaskName(s)
			mu, err := url.Parse(m)
			if err != nil {
				t.Fatalf("MaskName(%q) = %q, which does not parse: %v", s, m, err)
			}
			if pw, set := mu.User.Password(); set && pw != "xxxxx" || !set && mu.User.Username() != "" && mu.User.Username() != "xxxxx" {
				t.Errorf("MaskName(%q) = %q: the password shows", s, m)
			}
			if userInQuery(mu.RawQuery) || strings.Contains(mu.Path, "@") || strings.Contains(mu.Fragment, "@") {
				t.Errorf("MaskName(%q) = %q: its path, fragment or query (outside an addr parameter) has an '@' (user information)", s, m)
			}
			for name, values := range mu.Query() {
				for _, v := range values {
					if !knownParams[name] && v != "xxxxx" && v != "" {
						t.Errorf("MaskName(%q) = %q: the query parameter %s shows its value", s, m, name)
					}
				}
			}
		}
		n, nerr := ParseNode(s)
		a, err := Parse(s)
		switch {
		case err == nil && (nerr != nil || n.Cluster || n.Addr != a):
			t.Fatalf("Parse(%q) = %+v, but ParseNode = %+v, %v", s, a, n, nerr)
		case err != nil && nerr == nil && !n.Cluster:
			t.Fatalf("Parse(%q) fails (%v), but ParseNode gives a single server %+v", s, err, n)
		}
		if nerr != nil {
			return
		}
		if len(n.Seeds) == 0 || n.Seeds[0] != n.HostPort() || (!n.Cluster && len(n.Seeds) != 1) {
			t.Fatalf("ParseNode(%q).Seeds = %q, want %q first, and only it for a single server", s, n.Seeds, n.HostPort())
		}
		if n.Cluster && n.DB != 0 {
			t.Fatalf("ParseNode(%q) = a cluster with database %d", s, n.DB)
		}
		// The String does not depend on the password (but on whether
		// there is one): a password that shows elsewhere in it, as "s"
		// in "redis", is no failure, and any other is one.
		if n.Password != "" {
			other := n
			other.Password = "pw"
			if n.String() != other.String() {
				t.Errorf("String() %q reveals the password (with another: %q)", n.String(), other.String())
			}
		}
		if n.Cluster {
			back, err := ParseNode(n.String())
			if err != nil || !back.Cluster || !slices.Equal(back.Seeds, n.Seeds) || back.TLS != n.TLS || back.Username != n.Username {
				t.Errorf("ParseNode(%q).String() = %q, which parses as %+v, %v", s, n.String(), back, err)
			}
		}
	})
}

func TestParseNode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Node
		str  string
	}{
		{"127.0.0.1:6380", Node{Addr: Addr{Host: "127.0.0.1", Port: "6380"}, Seeds: []string{"127.0.0.1:6380"}}, "127.0.0.1:6380"},
		{"redis://:s3cret@h:1/2", Node{Addr: Addr{Host: "h", Port: "1", Password: "s3cret", DB: 2}, Seeds: []string{"h:1"}}, "redis://:xxxxx@h:1/2"},
		{"redis://h:1?cluster=false", Node{Addr: Addr{Host: "h", Port: "1"}, Seeds: []string{"h:1"}}, "h:1"},
		{"redis://h:1?cluster=true",
			Node{Addr: Addr{Host: "h", Port: "1"}, Cluster: true, Seeds: []string{"h:1"}},
			"redis://h:1?cluster=true"},
		{"redis://alice:s3cret@10.0.0.1:7000/0?cluster=true&addr=10.0.0.2:7001&addr=[::1]:7002&addr=node-3.example",
			Node{Addr: Addr{Host: "10.0.0.1", Port: "7000", Username: "alice", Password: "s3cret"}, Cluster: true,
				Seeds: []string{"10.0.0.1:7000", "10.0.0.2:7001", "[::1]:7002", "node-3.example:6379"}},
			"redis://alice:xxxxx@10.0.0.1:7000?cluster=true&addr=10.0.0.2:7001&addr=[::1]:7002&addr=node-3.example:6379"},
		{"redis://h:1?addr=h:2&cluster=1",
			Node{Addr: Addr{Host: "h", Port: "1"}, Cluster: true, Seeds: []string{"h:1", "h:2"}},
			"redis://h:1?cluster=true&addr=h:2"},
		{"redis://h:1?cluster=true&addr=h%3A2", // an escaped colon, as url.Values.Encode writes it
			Node{Addr: Addr{Host: "h", Port: "1"}, Cluster: true, Seeds: []string{"h:1", "h:2"}},
			"redis://h:1?cluster=true&addr=h:2"},
		{"rediss://:s3cret@h:1?cluster=true&addr=h:2&tls_server_name=redis.internal",
			Node{Addr: Addr{Host: "h", Port: "1", Password: "s3cret", TLS: true, TLSServerName: "redis.internal"}, Cluster: true, Seeds: []string{"h:1", "h:2"}},
			"rediss://:xxxxx@h:1?cluster=true&addr=h:2"},
	} {
		got, err := ParseNode(tc.in)
		if err != nil {
			t.Errorf("ParseNode(%q) error %v", tc.in, err)
			continue
		}
		if got.Addr != tc.want.Addr || got.Cluster != tc.want.Cluster || !slices.Equal(got.Seeds, tc.want.Seeds) {
			t.Errorf("ParseNode(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.str {
			t.Errorf("ParseNode(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
		back, err := ParseNode(got.String())
		if err != nil || back.Cluster != got.Cluster || !slices.Equal(back.Seeds, got.Seeds) {
			t.Errorf("ParseNode(%q) = %+v, %v: String does not round-trip", got.String(), back, err)
		}
		// Parse agrees on single servers and refuses clusters.
		a, err := Parse(tc.in)
		switch {
		case tc.want.Cluster && err == nil:
			t.Errorf("Parse(%q) = %+v, want an error: a cluster address", tc.in, a)
		case tc.want.Cluster && !strings.Contains(err.Error(), "cluster=true names a Redis Cluster"):
			t.Errorf("Parse(%q) error %q, want it to say the address names a cluster", tc.in, err)
		case !tc.want.Cluster && (err != nil || a != tc.want.Addr):
			t.Errorf("Parse(%q) = %+v, %v, want %+v", tc.in, a, err, tc.want.Addr)
		}
	}
}

func TestParseNodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:s3cret@h:1/2?cluster=true":                 "only database 0, not 2",
		"redis://u:s3cret@h:1?cluster=yes":                    "cluster must be true or false",
		"redis://u:s3cret@h:1?cluster=true&cluster=true":      `"cluster" given 2 times`,
		"redis://u:s3cret@h:1?addr=h:2":                       "needs cluster=true",
		"redis://u:s3cret@h:1?cluster=false&addr=h:2":         "needs cluster=true",
		"redis://u:s3cret@h:1?cluster=true&addr=":             "addr parameter 1: no host",
		"redis://u:s3cret@h:1?cluster=true&addr=h:2&addr=h:0": "addr parameter 2: port",
		"redis://u:s3cret@h:1?cluster=true&addr=h:1":          "seed h:1 given twice",
		"redis://u:s3cret@h:1?cluster=true&addr=h:2&addr=h:2": "seed h:2 given twice",
		"redis://u:s3cret@h?cluster=true&addr=h:6379":         "seed h:6379 given twice",
		"redis://u:s3cret@h:1?cluster=true&addr=u:s3cret@h:2": "addr parameter 1: want host:port, without credentials",
		"redis://u:s3cret@h:1?cluster=true&addr=h/x:2":        "addr parameter 1: the host has",
		"redis://u:s3cret@h:1?cluster=true&addr=h%26x:2":      "addr parameter 1: the host may have only",
		"redis://u:s3cret@h:1?cluster=true&addr=::1":          "addr parameter 1: an IPv6 address needs brackets",
		"redis://u:s3cret@h:1?cluster=true&tls_ca_file=x":     "needs rediss://",
		"redis://u:s3cret@h:1?cluster=true&db=0":              `unknown query parameter "db"`,
		// A user without a password, whom the clients would log in
		// differently.
		"redis://alice@h:1":  "a user name needs a password",
		"redis://alice:@h:1": "a user name needs a password",
		// Passwords with characters a URL's user information cannot hold:
		// the error says to percent-encode them.
		"redis://:pa#s3cret@h:6379":  "not a valid URL; if the user name or password has / ? # %",
		"redis://u:pa?s3cret@h:6379": "percent-encode it",
		"redis://u:pa/s3cret@h:6379": "percent-encode it",
		"redis://u:12/s3cret@h:6379": "percent-encode it",
		"redis://u:p%zzs3cret@h:1":   "percent-encode it",
		// User information without a scheme: with a ':', it said "an
		// IPv6 address needs brackets", as if the colons were an IPv6
		// address's.
		":s3cret@h:6379":  "a user name or password goes in a redis:// URL",
		"u:s3cret@h:6379": "a user name or password goes in a redis:// URL",
		"u:s3cret@h":      "a user name or password goes in a redis:// URL",
		"s3cret@h:6379":   "the host has '@'",
		"h/s3cret@x:6379": "the host has '@'",
	} {
		_, err := ParseNode(in)
		var aerr *Error
		switch {
		case err == nil:
			t.Errorf("ParseNode(%q) succeeded, want an error", in)
		case !errors.As(err, &aerr):
			t.Errorf("ParseNode(%q) error %T, want *Error", in, err)
		case !strings.Contains(err.Error(), want):
			t.Errorf("ParseNode(%q) error %q, want it to contain %q", in, err, want)
		case strings.Contains(err.Error(), "s3cret"):
			t.Errorf("ParseNode(%q) error %q contains the password", in, err)
		}
	}
}

func TestParseNodeTLS(t *testing.T) {
	n, cfg, err := ParseNodeTLS("rediss://:s3cret@h1:1?cluster=true&addr=h2:2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Cluster || !n.TLS || cfg == nil || cfg.ServerName != "h1" || !slices.Equal(n.Seeds, []string{"h1:1", "h2:2"}) {
		t.Errorf("ParseNodeTLS = %+v, %+v", n, cfg)
	}
	n, cfg, err = ParseNodeTLS("redis://h1:1?cluster=true&addr=h2:2", nil)
	if err != nil || cfg != nil || n.TLS || !n.Cluster {
		t.Errorf("ParseNodeTLS of a plain cluster = %+v, %v, %v", n, cfg, err)
	}
	_, _, err = ParseNodeTLS("rediss://:s3cret@h1:1?cluster=true&tls_ca_file=/nonexistent/ca.pem", nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "cluster=true") {
		t.Errorf("ParseNodeTLS with a missing CA file: error %v, want one naming the cluster without its password", err)
	}
}

// An empty TLS parameter is the same as one left out, as the package doc
// says: a template may leave it blank.
func TestEmptyTLSParametersAreAbsent(t *testing.T) {
	blank, err := Parse("rediss://h:1?tls_ca_file=&tls_cert_file=&tls_key_file=&tls_server_name=")
	if err != nil {
		t.Fatalf("Parse with empty TLS parameters: %v", err)
	}
	bare, err := Parse("rediss://h:1")
	if err != nil {
		t.Fatal(err)
	}
	if blank != bare {
		t.Errorf("Parse with empty TLS parameters = %+v, want %+v, as without them", blank, bare)
	}
}

// A password given as a query parameter, as some other clients take it
// (redis://h:6379?password=...), is refused, and the error shows the address
// without its value: errors never show a password, wherever it was written.
// Redact kept the query whole.
func TestQueryPasswordHidden(t *testing.T) {
	for _, in := range []string{
		"redis://h:6379?password=s3cret",
		"redis://h:6379/0?password=s3cret&db=1",
		"rediss://h:6379?tls_ca_file=/ca.pem&passwd=s3cret",
		"redis://h:6379?cluster=true&requirepass=s3cret&addr=h:2",
		"redis://h:6379?auth=s3cret#x",
	} {
		_, err := ParseNode(in)
		if err == nil {
			t.Errorf("ParseNode(%q) succeeded, want an error", in)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseNode(%q) error %q contains the password", in, err)
		}
	}
	_, err := ParseNode("redis://h:6379?password=s3cret")
	if err == nil || !strings.Contains(err.Error(), "redis://user:password@host:port") {
		t.Errorf("ParseNode with ?password= error %v, want it to say where a password goes", err)
	}
	// The known parameters, which hold no secret, still show.
	if got, want := Redact("rediss://u:s3cret@h:1?tls_ca_file=/ca.pem&x=s3cret"), "rediss://xxxxx@h:1?tls_ca_file=/ca.pem&x=xxxxx"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// An empty TLS parameter is the same as one left out on a redis:// address
// too, as the README says ("so that a template may leave it blank"): it was
// refused with "needs rediss://".
func TestEmptyTLSParametersOnPlainAddress(t *testing.T) {
	blank, err := ParseNode("redis://h:1?tls_ca_file=&tls_cert_file=&tls_key_file=&tls_server_name=")
	if err != nil {
		t.Fatalf("ParseNode with empty TLS parameters on redis://: %v", err)
	}
	bare, err := ParseNode("redis://h:1")
	if err != nil {
		t.Fatal(err)
	}
	if blank.Addr != bare.Addr {
		t.Errorf("ParseNode with empty TLS parameters = %+v, want %+v, as without them", blank, bare)
	}
	if _, err := ParseNode("redis://h:1?tls_ca_file=/ca.pem"); err == nil || !strings.Contains(err.Error(), "needs rediss://") {
		t.Errorf("ParseNode with tls_ca_file on redis://: error %v, want one saying it needs rediss://", err)
	}
}

// A missing port means DefaultPort for a bracketed IPv6 address too, as the
// README and the package doc say of any address: "[::1]" and
// "redis://[::1]/2" were refused with "want host:port, with brackets around
// an IPv6 address", though they have the brackets, while "localhost" and
// "redis://localhost" took 6379.
func TestIPv6WithoutPort(t *testing.T) {
	for in, want := range map[string]string{
		"[::1]":                               "[::1]:6379",
		"redis://[::1]":                       "[::1]:6379",
		"redis://[::1]/2":                     "[::1]:6379",
		"rediss://:pw@[fe80::1]":              "[fe80::1]:6379",
		"redis://h:1?cluster=true&addr=[::1]": "h:1 [::1]:6379",
	} {
		n, err := ParseNode(in)
		if err != nil {
			t.Errorf("ParseNode(%q): %v, want %s", in, err, want)
			continue
		}
		if got := strings.Join(n.Seeds, " "); got != want {
			t.Errorf("ParseNode(%q).Seeds = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"[]", "[::1", "::1]", "[::1]x", "redis://[]"} {
		if n, err := ParseNode(in); err == nil {
			t.Errorf("ParseNode(%q) = %+v, want an error", in, n)
		}
	}
}

// The parameters that Redact shows, that the error for an unknown one lists,
// and that Parse takes are one list: each listed name parses, shows its value
// through Redact, and is named in the error.
func TestKnownParametersAreOneList(t *testing.T) {
	valid := map[string]string{"cluster": "true", "addr": "h:2"} // tls_*: empty is left out
	_, err := ParseNode("rediss://h:6379?nosuch=1")
	if err == nil {
		t.Fatal("ParseNode with ?nosuch=1 succeeded")
	}
	for _, name := range knownParamNames {
		in := "rediss://h:6379?cluster=true&" + name + "=" + valid[name]
		if name == "cluster" {
			in = "rediss://h:6379?cluster=true"
		}
		if _, err := ParseNode(in); err != nil {
			t.Errorf("ParseNode(%q): %v", in, err)
		}
		if got := Redact("redis://h:1?" + name + "=v"); got != "redis://h:1?"+name+"=v" {
			t.Errorf("Redact hides the value of %s: %q", name, got)
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error for an unknown parameter, %q, does not name %s", err, name)
		}
	}
}

// TestParseNodeSeedAsURL: an addr parameter written as a URL, as the node
// itself is, says that a seed is host:port. It said "an IPv6 address needs
// brackets" (the colons of "redis://h:2" read as an IPv6 address's) or
// `port "//h" is not a number`.
func TestParseNodeSeedAsURL(t *testing.T) {
	for _, in := range []string{
		"redis://h:1?cluster=true&addr=redis://h:2",
		"rediss://h:1?cluster=true&addr=rediss://h:2",
		"redis://h:1?cluster=true&addr=redis://h",
		"redis://h:1?cluster=true&addr=h:2&addr=redis%3A%2F%2Fh%3A3",
		"redis://u:s3cret@h:1?cluster=true&addr=REDIS://h:2",
	} {
		_, err := ParseNode(in)
		switch {
		case err == nil:
			t.Errorf("ParseNode(%q) succeeded, want an error", in)
		case !strings.Contains(err.Error(), "want host:port, not a URL"):
			t.Errorf("ParseNode(%q) error %q, want it to say \"want host:port, not a URL\"", in, err)
		case strings.Contains(err.Error(), "s3cret"):
			t.Errorf("ParseNode(%q) error %q contains the password", in, err)
		}
	}
}

// An addr parameter with credentials, which ParseNode refuses, is masked up
// to its own '@' in the error: the URL's host and the parameter's name stay,
// the passwords go. Redact masked everything up to the addr's '@', the
// URL's host and "?cluster=true&addr=" with it ("redis://xxxxx@h2:2"), so
// that the error's "addr parameter 1" pointed at nothing it showed.
func TestAddrParamCredentialsMasked(t *testing.T) {
	for in, want := range map[string]string{
		"redis://h1:1?cluster=true&addr=u2:s3cret@h2:2":                  "redis://h1:1?cluster=true&addr=xxxxx@h2:2",
		"redis://u:s3cret@h1:1?cluster=true&addr=u2:s3cret@h2:2":         "redis://xxxxx@h1:1?cluster=true&addr=xxxxx@h2:2",
		"rediss://h1:1/0?cluster=true&addr=h3:3&addr=u2:s3cret@h2:2":     "rediss://h1:1/0?cluster=true&addr=h3:3&addr=xxxxx@h2:2",
		"redis://h1:1?addr=u%40x:s3cret%40y%40h2:2&cluster=true":         "redis://h1:1?addr=xxxxx@h2:2&cluster=true",
		"redis://u:s3cret@h1:1?cluster=true&addr=s3cret@h2:2&addr=h2:22": "redis://xxxxx@h1:1?cluster=true&addr=xxxxx@h2:2&addr=h2:22",
	} {
		_, err := ParseNode(in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("ParseNode(%q) = %v, want an *Error", in, err)
			continue
		}
		if e.Addr != want || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseNode(%q) error names %q, want %q, without the password:\n%v", in, e.Addr, want, err)
		}
	}
}

// An '@' in a query parameter's value (an addr's credentials) masks the
// address up to it; the parameters after it are still masked as a query's,
// unless known. Redact left them whole, as a host's text after the '@':
// "redis://xxxxx@h2:2&pw=s3cret", with the password of an unknown parameter
// that ParseNode refuses before it reads the addr parameters.
func TestRedactQueryAfterAddrCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"redis://h1:1?cluster=true&addr=u:s3cret@h2:2&pw=s3cret":                   "redis://xxxxx@h2:2&pw=xxxxx",
		"redis://h1:1?cluster=true&addr=u:s3cret@h2:2&tls_ca_file=ca.pem&x=s3cret": "redis://xxxxx@h2:2&tls_ca_file=ca.pem&x=xxxxx",
		"redis://u:pa?ss@h1:1?pw=s3cret":                                           "redis://xxxxx@h1:1?pw=xxxxx",
		"redis://u:pa?s&s@h1:1":                                                    "redis://xxxxx@h1:1",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if _, err := ParseNode(in); err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseNode(%q): the error shows the password: %v", in, err)
		}
	}
}

// An address longer than maxShown is cut there, with "...", in Redact and in
// ParseNode's errors about its seeds, after its secrets were masked.
func TestRedactLongAddressShortened(t *testing.T) {
	long := "redis://u:s3cret@h1:1/" + strings.Repeat("p", 2*maxShown)
	if got := Redact(long); len(got) != maxShown+len("...") || !strings.HasSuffix(got, "...") || strings.Contains(got, "s3cret") {
		t.Errorf("Redact(long) = %q (%d bytes), want %d bytes and \"...\", the password masked", got, len(got), maxShown)
	}
	_, err := ParseNode("redis://u:s3cret@h1:1?cluster=true&addr=" + strings.Repeat("h", 2*maxShown) + ":x")
	if err == nil {
		t.Fatal("ParseNode accepted a seed whose port is not a number")
	}
	var e *Error
	if !errors.As(err, &e) || len(e.Addr) != maxShown+len("...") || strings.Contains(e.Addr, "s3cret") {
		t.Errorf("ParseNode's error names %q (%d bytes), want %d bytes, the password masked", e.Addr, len(e.Addr), maxShown+len("..."))
	}
	if short := "redis://h:1"; Redact(short) != short {
		t.Errorf("Redact(%q) = %q, want it whole", short, Redact(short))
	}
}

// An '@' before the first "://" is user information all the same: a "://"
// after it (a second address given with white space rather than a comma, or
// a path) is no scheme of the address's, and Redact hides everything up to
// its last '@', as it does for an address without a scheme.
func TestRedactUserInfoBeforeScheme(t *testing.T) {
	for in, want := range map[string]string{
		"u:s3cret@h:1 redis://h2:2":  "xxxxx@h:1 redis://h2:2",
		":s3cret@h:1/redis://x":      "xxxxx@h:1/redis://x",
		"u:s3cret@h:1,rediss://h2:2": "xxxxx@h:1,rediss://h2:2",
		"redis://u:s3cret@h:1":       "redis://xxxxx@h:1",
		"s3cret://h:1":               "s3cret://h:1", // a scheme, though unknown: no user information
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if _, err := ParseNode(in); err != nil && strings.Contains(err.Error(), "s3cret") && !strings.HasPrefix(in, "s3cret") {
			t.Errorf("ParseNode(%q): the error shows the password: %v", in, err)
		}
	}
}

// MaskName leaves the names of this module's drivers as they are and masks
// a password any other name shows.
func TestMaskName(t *testing.T) {
	for name, want := range map[string]string{
		"redis://u:xxxxx@h:1":                        "redis://u:xxxxx@h:1",
		"redis://h:1?cluster=true&addr=u:xxxxx@h2:2": "redis://h:1?cluster=true&addr=u:xxxxx@h2:2",
		"redis://u:xxxxx@h:1?cluster=true&addr=h2:2": "redis://u:xxxxx@h:1?cluster=true&addr=h2:2",
		"h:1":                     "h:1",
		"memory-3":                "memory-3",
		"redis://u:pw@h:1":        "redis://u:xxxxx@h:1",
		"rediss://:pw@h:1/2":      "rediss://:xxxxx@h:1/2",
		"u:pw@h:1":                "xxxxx@h:1",
		"redis://pw@h:1":          "redis://xxxxx@h:1",
		"redis://xxxxx@h:1":       "redis://xxxxx@h:1",
		"redis://h:1?password=pw": "redis://h:1?password=xxxxx",
		"rediss://h:1/2?tls_ca_file=/ca.pem&auth=pw": "rediss://h:1/2?tls_ca_file=/ca.pem&auth=xxxxx",
		"redis://h:1?cluster=true&addr=u:pw@h2:2":    "redis://h:1?cluster=true&addr=xxxxx@h2:2",
		"redis://u:pw@h:1?cluster=true&addr=u:pw@h2": "redis://u:xxxxx@h:1?cluster=true&addr=xxxxx@h2",
		// A seed's password that only ends as a masked one does.
		"redis://h:1?cluster=true&addr=u:s3cret:xxxxx@h2:2": "redis://h:1?cluster=true&addr=xxxxx@h2:2",
		"redis://h:1?cluster=true&addr=:s3cret:xxxxx@h2:2":  "redis://h:1?cluster=true&addr=xxxxx@h2:2",
	} {
		if got := MaskName(name); got != want {
			t.Errorf("MaskName(%q) = %q, want %q", name, got, want)
		}
	}
}
