package tlsdial_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/tlsdial"
	"github.com/go-redlock/redlock/redistest"
)

// server starts a TLS echo server of lines on loopback with certs's server
// certificate, asking clients for certificates as auth says.
func server(t *testing.T, certs *redistest.Certs, auth tls.ClientAuthType) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certs.ServerCertFile, certs.ServerKeyFile)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(certs.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: auth})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func clientConfig(t *testing.T, certs *redistest.Certs, withCert bool) *tls.Config {
	t.Helper()
	cfg, err := certs.ClientConfig()
	require.NoError(t, err)
	cfg.ServerName = "127.0.0.1"
	if !withCert {
		cfg.Certificates = nil
	}
	return cfg
}

// roundTrip writes a line and reads it back.
func roundTrip(c net.Conn) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

// A server that requires a client certificate refuses a client without one
// after the handshake; the error says why.
func TestNoClientCertificateIsExplained(t *testing.T) {
	certs := redistest.NewCerts(t)
	addr := server(t, certs, tls.RequireAndVerifyClientCert)
	cfg := clientConfig(t, certs, false)
	c, err := tlsdial.Dial(t.Context(), &net.Dialer{}, "tcp", addr, cfg)
	if err == nil { // TLS 1.3: the refusal comes after the handshake
		defer c.Close()
		err = roundTrip(c)
	}
	require.Error(t, err)
	require.ErrorContains(t, err, tlsdial.NoClientCertHint)
	require.Nil(t, errors.Unwrap(err), "go-redis unwraps a handshake's error once (errors.Unwrap): the hint must survive it")
	require.Nil(t, cfg.GetClientCertificate, "Dial changed the caller's tls.Config")

	// With the certificate: accepted, and no wrapper.
	c, err = tlsdial.Dial(t.Context(), &net.Dialer{}, "tcp", addr, clientConfig(t, certs, true))
	require.NoError(t, err)
	defer c.Close()
	require.IsType(t, &tls.Conn{}, c)
	require.NoError(t, roundTrip(c))
}

// A server that only asks for a certificate accepts a client without one,
// and once it has answered, the connection's errors carry no hint.
func TestOptionalClientCertificate(t *testing.T) {
	certs := redistest.NewCerts(t)
	addr := server(t, certs, tls.VerifyClientCertIfGiven)
	c, err := tlsdial.Dial(t.Context(), &net.Dialer{}, "tcp", addr, clientConfig(t, certs, false))
	require.NoError(t, err)
	require.NoError(t, roundTrip(c))
	require.NoError(t, c.Close())
	_, err = c.Write([]byte("x\n"))
	require.Error(t, err)
	require.NotContains(t, err.Error(), tlsdial.NoClientCertHint)
}

// A server that accepts TCP connections and never answers: the handshake
// ends with the context, a deadline keeps its timeout error.
func TestHandshakeBoundedByContext(t *testing.T) {
	l := redistest.NewSilent(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tlsdial.Dial(ctx, &net.Dialer{}, "tcp", l.Addr(), clientConfig(t, redistest.NewCerts(t), false))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second)
}

// An unknown CA fails the handshake with the x509 error in the chain.
func TestUnknownCA(t *testing.T) {
	addr := server(t, redistest.NewCerts(t), tls.NoClientCert)
	_, err := tlsdial.Dial(t.Context(), &net.Dialer{}, "tcp", addr, clientConfig(t, redistest.NewCerts(t), true))
	var unknown x509.UnknownAuthorityError
	require.True(t, errors.As(err, &unknown), "error %v", err)
	require.True(t, strings.Contains(err.Error(), "certificate signed by unknown authority"))
}
