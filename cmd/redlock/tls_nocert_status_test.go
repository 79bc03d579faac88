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
// and nothing more (found by an outside check of issue 7: "a server that
// requires client certificates refuses a client without one, with a clear
// error"). Every node's error must now name the certificate.
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
	saysCert := func(line string) bool {
		return strings.Contains(line, "client certificate") || strings.Contains(line, "certificate required")
	}
	for range 3 {
		r := invoke(t, "", "status", "--timeout", "2s", "--nodes", nodeList, "k")
		rows := 0
		for line := range strings.Lines(r.stdout) {
			if !strings.Contains(line, "rediss://") {
				continue
			}
			rows++
			if !saysCert(line) {
				t.Errorf("status without a client certificate: a node's error does not name it: %q\n%v", line, r)
			}
		}
		if rows != 3 || r.code != 69 {
			t.Errorf("status: want exit 69 and a row for each of the 3 nodes, got %d rows:\n%v", rows, r)
		}
		r = invoke(t, "", "doctor", "--timeout", "2s", "--nodes", nodeList)
		failed := 0
		for line := range strings.Lines(r.stdout) {
			if !strings.Contains(line, "PING failed") {
				continue
			}
			failed++
			if !saysCert(line) {
				t.Errorf("doctor without a client certificate: a node's error does not name it: %q\n%v", line, r)
			}
		}
		if failed != 3 || r.code != 1 {
			t.Errorf("doctor: want exit 1 and PING failed on each of the 3 nodes, got %d:\n%v", failed, r)
		}
	}
}
