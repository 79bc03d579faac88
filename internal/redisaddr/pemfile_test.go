package redisaddr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-redlock/redlock/internal/redisserver"
)

// A CA, certificate or key file is read up to maxPEMFile bytes: a path to
// something without an end (/dev/zero) or to a huge file is an error that
// names the parameter and says why, rather than a read until the process
// runs out of memory. Real files of certificates still load.
func TestPEMFileBounded(t *testing.T) {
	dir := t.TempDir()
	certs, err := redisserver.GenerateCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.pem")
	if err := os.WriteFile(huge, make([]byte, maxPEMFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	good := "rediss://h:1?tls_ca_file=" + certs.CAFile + "&tls_cert_file=" + certs.ClientCertFile + "&tls_key_file=" + certs.ClientKeyFile
	_, cfg, err := ParseTLS(good, nil)
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("ParseTLS of real files: %v, %+v", err, cfg)
	}
	for _, endless := range []string{"/dev/zero", huge} {
		for _, tc := range []struct{ param, addr string }{
			{"tls_ca_file", "rediss://h:1?tls_ca_file=" + endless},
			{"tls_cert_file", "rediss://h:1?tls_cert_file=" + endless + "&tls_key_file=" + certs.ClientKeyFile},
			{"tls_key_file", "rediss://h:1?tls_cert_file=" + certs.ClientCertFile + "&tls_key_file=" + endless},
		} {
			_, _, err := ParseTLS(tc.addr, nil)
			if err == nil || !strings.Contains(err.Error(), tc.param+" "+endless+": longer than 8 MiB") {
				t.Errorf("ParseTLS with %s=%s: error %v, want one saying it is longer than 8 MiB", tc.param, endless, err)
			}
		}
	}
	_, _, err = ParseTLS("rediss://h:1?tls_cert_file=/nonexistent/c.pem&tls_key_file="+certs.ClientKeyFile, nil)
	if err == nil || !strings.Contains(err.Error(), "tls_cert_file: open /nonexistent/c.pem") {
		t.Errorf("ParseTLS with a missing certificate file: error %v, want one naming tls_cert_file", err)
	}
}
