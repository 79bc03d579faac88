package security_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

const tlsPassword = "tls-Pa55word-never-shown"

// tlsServers starts three servers that accept only TLS with client
// certificates signed by certs's CA, and a password.
func tlsServers(t *testing.T, certs *redistest.Certs) []*redistest.Server {
	return redistest.NewServers(t, 3, redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword(tlsPassword))
}

// withQuery returns u with its query parameters changed by edit.
func withQuery(t *testing.T, u string, edit func(url.Values)) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	q := p.Query()
	edit(q)
	p.RawQuery = q.Encode()
	return p.String()
}

// Every feature works over mutual TLS through every driver, with rediss://
// addresses carrying the CA and the client certificate, and with host:port
// addresses and WithTLSConfig.
func TestTLSEveryFeature(t *testing.T) {
	certs := redistest.NewCerts(t)
	servers := tlsServers(t, certs)
	cfg, err := certs.ClientConfig()
	require.NoError(t, err)
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			t.Run("rediss", func(t *testing.T) {
				exercise(t, servers, "", func(opts ...redlock.Option) *redlock.Client {
					return openClient(t, d.name, urls(servers), opts...)
				})
			})
			t.Run("WithTLSConfig", func(t *testing.T) {
				addrs := make([]string, len(servers))
				for i, s := range servers {
					addrs[i] = "redis://:" + tlsPassword + "@" + s.Addr()
				}
				exercise(t, servers, "", func(opts ...redlock.Option) *redlock.Client {
					return openClient(t, d.name, addrs, append(opts, redlock.WithTLSConfig(cfg))...)
				})
			})
		})
	}
}

// A server whose certificate the given CA did not sign is refused, and the
// error says why; so is a server that requires a client certificate, from a
// client without one.
func TestTLSRefused(t *testing.T) {
	certs := redistest.NewCerts(t)
	servers := tlsServers(t, certs)
	other := redistest.NewCerts(t) // another CA
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				edit func(url.Values)
				want func(error) bool
				says string
				code string // driver.PermanentCode's, which stops Lock
			}{
				{
					name: "UnknownCA",
					edit: func(q url.Values) { q.Set("tls_ca_file", other.CAFile) },
					want: func(err error) bool { var u x509.UnknownAuthorityError; return errors.As(err, &u) },
					says: "x509: certificate signed by unknown authority",
					code: "TLS: the server's certificate is not trusted",
				},
				{
					name: "NoClientCertificate",
					edit: func(q url.Values) { q.Del("tls_cert_file"); q.Del("tls_key_file") },
					want: func(error) bool { return true },
					says: "certificate",
					code: "TLS: the server refused the client's certificate",
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					addrs := make([]string, len(servers))
					for i, s := range servers {
						addrs[i] = withQuery(t, s.URL(), tc.edit)
					}
					// A node timeout of a second, not the default 200ms: a
					// client without a certificate completes its side
					// of a TLS 1.3 handshake and hears the server's refusal
					// with its first reply, which a loaded machine can delay
					// past a short timeout (then the error says only
					// "deadline exceeded").
					c := openClient(t, d.name, addrs, redlock.WithNodeTimeout(time.Second))
					start := time.Now()
					_, err := c.TryLock(t.Context(), "refused-"+d.name)
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					require.True(t, tc.want(err), "TryLock error %v: the TLS error must stay in the chain", err)
					require.ErrorContains(t, err, tc.says)
					// Told as an error retrying cannot fix from the one
					// attempt, whether the alert was read or the
					// connection broke first.
					require.ErrorContains(t, err, tc.code+", which retrying cannot fix")
					require.NotContains(t, err.Error(), tlsPassword)
					require.Less(t, time.Since(start), 2*time.Second, "a TLS refusal must fail fast")
					var ne *redlock.NodeError
					require.ErrorAs(t, err, &ne)
					require.Contains(t, ne.Addr, "rediss://:xxxxx@")
					// A certificate no retry makes trusted, or none given
					// to a server that requires one: Lock stops at once,
					// as for a wrong password, rather than retry until its
					// context ends (also through rueidis and valkey-go,
					// which may hear the refusal only as a reset).
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					_, err = c.Lock(ctx, "refused-"+d.name)
					require.NoError(t, ctx.Err(), "Lock retried until its context ended: %v", err)
					require.ErrorContains(t, err, tc.code+", which retrying cannot fix")
					require.True(t, tc.want(err), "Lock error %v: the TLS error must stay in the chain", err)
				})
			}
			// The same servers accept the client certificate.
			c := openClient(t, d.name, urls(servers), redlock.WithNodeTimeout(time.Second))
			l, err := c.TryLock(t.Context(), "accepted-"+d.name)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
		})
	}
}
