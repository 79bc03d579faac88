package security_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// FuzzOpen feeds arbitrary addresses to every Redis driver's Open and
// OpenConfig: they never panic, an address that parses gives a node whose
// String and %v hide the password, and an address that does not gives an
// error that hides it. Open does not connect, so no server is needed.
//
//	go test -fuzz FuzzOpen ./security
func FuzzOpen(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1:6379", "localhost", "[::1]:7000", "redis://u:p4ssw0rd@h:1/2", "redis://:p4ssw0rd@[::1]:2/0",
		"rediss://:p4ssw0rd@h:1?tls_server_name=redis.internal", "rediss://u:p4ssw0rd@h:1?tls_ca_file=/nonexistent/ca.pem",
		"rediss://h:1?tls_cert_file=/nonexistent/c.pem&tls_key_file=/nonexistent/k.pem",
		"redis://u:p4ssw0rd@h:99999", "redis://u:p4ssw0rd@h:1/x", "http://u:p4ssw0rd@h:1", "", "redis://", "::1",
		"redis://u:p%34ssw0rd@h:1", "rediss://u:p4ssw0rd@h:1?tls_bogus=1#frag",
		"redis://u:p4ssw0rd@h:1?cluster=true&addr=h:2&addr=[::1]:3", "rediss://:p4ssw0rd@h:1/0?cluster=true&addr=h:2",
		"redis://u:p4ssw0rd@h:1/2?cluster=true", "redis://u:p4ssw0rd@h:1?addr=h:2", "redis://u:p4ssw0rd@h:1?cluster=true&addr=h:2&addr=h:2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		// ParseNode accepts every address a driver may accept, a cluster's
		// included.
		a, perr := redisaddr.ParseNode(addr)
		if perr == nil {
			for _, file := range []string{a.TLSCAFile, a.TLSCertFile, a.TLSKeyFile} {
				if _, err := os.Stat(file); file != "" && err == nil {
					t.Skip("names a file that exists: Open would read it") // /dev/zero, say
				}
			}
		}
		// The password must not show, unless it shows anyway in what a
		// message may name: the address without its user information
		// (a host or a file that contains it), or xxxxx.
		password := a.Password
		if perr != nil || len(password) < 3 || strings.Contains(redisaddr.Redact(addr), password) ||
			strings.Contains(a.Username, password) || strings.Contains("xxxxx", password) {
			password = ""
		}
		hides := func(what, text string) {
			if password != "" && strings.Contains(text, password) {
				t.Errorf("%s of %q shows the password: %q", what, addr, text)
			}
		}
		for _, d := range drivers {
			opens := map[string]func() (driver.Node, error){
				"Open": func() (driver.Node, error) { return d.d.Open(addr) },
			}
			if co, ok := d.d.(driver.ConfigOpener); ok {
				opens["OpenConfig"] = func() (driver.Node, error) {
					return co.OpenConfig(addr, driver.Config{TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
				}
			}
			for name, open := range opens {
				n, err := open()
				if perr != nil && err == nil {
					t.Errorf("%s %s(%q) succeeded where the address parser fails: %v", d.name, name, addr, perr)
				}
				if err != nil {
					hides(d.name+" "+name+"'s error", err.Error())
					continue
				}
				for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
					hides(d.name+" node's "+verb, fmt.Sprintf(verb, n))
				}
				if err := n.Close(); err != nil {
					t.Errorf("%s Close: %v", d.name, err)
				}
			}
		}
	})
}
