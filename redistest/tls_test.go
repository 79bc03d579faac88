package redistest_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
)

func TestTLSServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	certs := redistest.NewCerts(t)
	s := redistest.NewServer(t, redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword("pw"))
	require.Same(t, certs, s.Certs())

	// Do and the readiness probe speak TLS, with the client certificate.
	v, err := s.Do(ctx, "CONFIG", "GET", "tls-auth-clients")
	require.NoError(t, err)
	require.Equal(t, []any{"tls-auth-clients", "yes"}, v)
	v, err = s.Do(ctx, "CONFIG", "GET", "port")
	require.NoError(t, err)
	require.Equal(t, []any{"port", "0"}, v, "a TLS server must not listen for plain TCP")

	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	require.Equal(t, "rediss", u.Scheme)
	require.Equal(t, s.Addr(), u.Host)
	pw, _ := u.User.Password()
	require.Equal(t, "pw", pw)
	q := u.Query()
	require.Equal(t, certs.CAFile, q.Get("tls_ca_file"))
	require.Equal(t, certs.ClientCertFile, q.Get("tls_cert_file"))
	require.Equal(t, certs.ClientKeyFile, q.Get("tls_key_file"))

	// The server's certificate is for 127.0.0.1 and signed by the CA.
	cfg, err := certs.ClientConfig()
	require.NoError(t, err)
	conn, err := tls.Dial("tcp", s.Addr(), cfg)
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	// Another Certs's CA does not trust it.
	other, err := redistest.NewCerts(t).ClientConfig()
	require.NoError(t, err)
	_, err = tls.Dial("tcp", s.Addr(), other)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
}

// A server that requires client certificates drops a client without one;
// with ClientCertsNo it accepts it.
func TestTLSClientCerts(t *testing.T) {
	t.Parallel()
	certs := redistest.NewCerts(t)
	noCert := func(t *testing.T) *tls.Config {
		cfg, err := certs.ClientConfig()
		require.NoError(t, err)
		cfg.Certificates = nil
		return cfg
	}
	// ping sends PING without a client certificate and returns the reply or
	// the error.
	ping := func(t *testing.T, addr string) (string, error) {
		conn, err := tls.Dial("tcp", addr, noCert(t))
		if err != nil {
			return "", err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return "", err
		}
		buf := make([]byte, 64)
		n, err := conn.Read(buf)
		return string(buf[:n]), err
	}
	for _, tc := range []struct {
		cc   redistest.ClientCerts
		want bool
	}{
		{redistest.ClientCertsRequired, false},
		{redistest.ClientCertsOptional, true},
		{redistest.ClientCertsNo, true},
	} {
		s := redistest.NewServer(t, redistest.WithTLS(certs, tc.cc))
		reply, err := ping(t, s.Addr())
		if tc.want {
			require.NoError(t, err, "ClientCerts %d", tc.cc)
			require.Equal(t, "+PONG\r\n", reply)
		} else {
			require.Error(t, err, "ClientCerts %d: PING without a client certificate", tc.cc)
		}
	}
}

func TestTLSPlainClientRefused(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsNo))
	conn, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte("PING\r\n"))
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	require.NotContains(t, string(buf[:n]), "PONG")
}

func TestWithTLSInvalid(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, err := redistest.Start(ctx, redistest.WithTLS(nil, redistest.ClientCertsNo))
	require.ErrorContains(t, err, "WithTLS needs Certs")
	_, err = redistest.Start(ctx, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCerts(7)))
	require.ErrorContains(t, err, "unknown ClientCerts")
	_, err = redistest.Start(ctx, redistest.WithConfig("tls-port", "1"))
	require.ErrorContains(t, err, "WithTLS")
	missing := *redistest.NewCerts(t)
	require.NoError(t, os.Remove(missing.CAFile))
	_, err = redistest.Start(ctx, redistest.WithTLS(&missing, redistest.ClientCertsNo))
	require.Error(t, err)
}

// A TLS server restarts as a TLS server.
func TestTLSRestart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := redistest.NewServer(t, redistest.WithTLS(redistest.NewCerts(t), redistest.ClientCertsRequired))
	require.NoError(t, s.Restart(ctx))
	v, err := s.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v)
}
