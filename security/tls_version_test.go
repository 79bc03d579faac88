package security_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// TestTLSNoCommonVersion: a client and servers that accept no common TLS
// version (the client's MaxVersion below Go's least, or below the only one
// the servers' tls-protocols allow) are a configuration to fix, as a
// certificate no one trusts is: Lock stops at once with the reason, through
// every driver, rather than retry until its context ends.
func TestTLSNoCommonVersion(t *testing.T) {
	certs := redistest.NewCerts(t)
	any12 := tlsServers(t, certs)
	only13 := redistest.NewServers(t, 3, redistest.WithTLS(certs, redistest.ClientCertsRequired), redistest.WithPassword(tlsPassword), redistest.WithConfig("tls-protocols", "TLSv1.3"))
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name    string
				servers []*redistest.Server
				max     uint16
				says    string
			}{
				{"client allows none", any12, tls.VersionTLS11, "tls: no supported versions satisfy MinVersion and MaxVersion"},
				{"server allows none the client does", only13, tls.VersionTLS12, "protocol version not supported"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					cfg, err := certs.ClientConfig()
					require.NoError(t, err)
					cfg.MaxVersion = tc.max
					addrs := make([]string, len(tc.servers))
					for i, s := range tc.servers {
						addrs[i] = "redis://:" + tlsPassword + "@" + s.Addr()
					}
					c := openClient(t, d.name, addrs, redlock.WithTLSConfig(cfg), redlock.WithNodeTimeout(time.Second))
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					_, err = c.Lock(ctx, "version-"+d.name)
					require.NoError(t, ctx.Err(), "Lock retried until its context ended: %v", err)
					require.ErrorContains(t, err, "TLS: no protocol version both sides accept, which retrying cannot fix")
					require.ErrorContains(t, err, tc.says)
					require.NotContains(t, err.Error(), tlsPassword)
				})
			}
		})
	}
}
