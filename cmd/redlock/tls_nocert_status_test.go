//go:build unix

package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// TestStatusDoctorSayClientCertMissing gives status and doctor TLS servers
// that require a client certificate, without one. With TLS 1.3 the server
// checks the client's certificate after the client finished its handshake,
// and closes the connection when the client first writes: the client reads
// the "certificate required" alert, or only a reset connection. The drivers
// dial with package tlsdial, which then says that the server asked for a
// certificate and none was given; status and doctor dialed with go-redis'
// own dialer and reported some nodes as "write: connection reset by peer"
// and nothing more (found by an outside check: a server that requires
// client certificates refuses a client without one, with a clear error).
// Every node's error must now name the certificate.
func TestStatusDoctorSayClientCertMissing(t *testing.T) {
	t.Parallel()
	servers := redistest.NewServers(t, 3, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired))
	var urls []string
	for _, s := range servers {
		u, err := url.Parse(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Del("tls_cert_file")
		q.Del("tls_key_file")
		u.RawQuery = q.Encode()
		urls = append(urls, u.String())
	}
	nodeList := strings.Join(urls, ",")
	// check wants r, cmd's run, to exit with code and to have one line containing
	// marker for each of the 3 nodes, each naming the certificate.
	check := func(cmd string, r result, marker string, code int) {
		t.Helper()
		lines := 0
		for line := range strings.Lines(r.stdout) {
			if !strings.Contains(line, marker) {
				continue
			}
			lines++
			if !strings.Contains(line, "client certificate") && !strings.Contains(line, "certificate required") {
				t.Errorf("%s without a client certificate: a node's error does not name it: %q\n%v", cmd, line, r)
			}
		}
		if lines != 3 || r.code != code {
			t.Errorf("%s: want exit %d and a line with %q for each of the 3 nodes, got %d lines:\n%v", cmd, code, marker, lines, r)
		}
	}
	for range 3 {
		check("status", invoke(t, "", "status", "--timeout", "2s", "--nodes", nodeList, "k"), "rediss://", exitFailure)
		check("doctor", invoke(t, "", "doctor", "--timeout", "2s", "--nodes", nodeList), "PING failed", 1)
	}
}
