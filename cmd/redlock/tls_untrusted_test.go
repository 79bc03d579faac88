//go:build unix

package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// A server whose certificate the given CA did not sign is refused for good,
// as a wrong password is: run --wait exits 1 at once with the TLS error,
// rather than retry until its wait ends (69).
func TestRunUntrustedServerCertificate(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 3, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsNo))
	other := redistest.NewCerts(t) // another CA
	var addrs []string
	for _, s := range servers {
		u, err := url.Parse(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("tls_ca_file", other.CAFile)
		u.RawQuery = q.Encode()
		addrs = append(addrs, u.String())
	}
	r := invoke(t, "", "run", "--nodes", strings.Join(addrs, ","), "--wait", "10m", "untrusted", "--", "true")
	if r.code != exitFailure || !strings.Contains(r.stderr, "TLS: the server's certificate is not trusted, which retrying cannot fix") || !strings.Contains(r.stderr, "unknown authority") {
		t.Errorf("run against servers of an unknown CA: want exit 1 and the TLS error, got %v", r)
	}
}
