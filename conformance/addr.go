package conformance

import (
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/go-redlock/redlock/redistest"
)

// Addr is a redis-server that RunRedis started, as a driver's Open must
// reach it. RunRedis writes it as an address with Addr.URL, or with the
// function given to WithAddress.
type Addr struct {
	// Host and Port are where the server listens (a loopback address).
	Host, Port string
	// Username and Password authenticate: Username "" is the default user,
	// Password "" none.
	Username, Password string
	// DB is the database to select.
	DB int
	// TLS says that the server requires TLS. CAFile is the PEM bundle of the
	// CAs to trust; CertFile and KeyFile are the client certificate and its
	// key, or "" to connect without one.
	TLS                       bool
	CAFile, CertFile, KeyFile string
}

// URL writes a in the address grammar of this module's drivers, which
// RunRedis uses unless given WithAddress: "host:port" for a server without
// credentials, database or TLS, otherwise
// "redis://[user:password@]host:port[/db]", or "rediss://" with the query
// parameters tls_ca_file, tls_cert_file and tls_key_file for TLS.
func (a Addr) URL() string {
	hostPort := net.JoinHostPort(a.Host, a.Port)
	if a.Username == "" && a.Password == "" && a.DB == 0 && !a.TLS {
		return hostPort
	}
	u := url.URL{Scheme: "redis", Host: hostPort}
	if a.Username != "" || a.Password != "" {
		u.User = url.UserPassword(a.Username, a.Password)
	}
	if a.DB != 0 {
		u.Path = "/" + strconv.Itoa(a.DB)
	}
	if a.TLS {
		u.Scheme = "rediss"
		q := url.Values{}
		for name, v := range map[string]string{"tls_ca_file": a.CAFile, "tls_cert_file": a.CertFile, "tls_key_file": a.KeyFile} {
			if v != "" {
				q.Set(name, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// A RedisOption changes how RunRedis tests a driver.
type RedisOption func(*redisSuite)

// WithAddress makes RunRedis give the driver's Open the addresses that format
// writes, for a driver whose addresses are not those of this module's drivers
// (see Addr.URL). Open/MalformedHidesPassword then checks that Open refuses
// addresses format writes with the port 99999. A nil format changes nothing.
// It covers single servers only: the subtests of WithCluster and OnlyCluster
// open their clusters with this module's cluster addresses
// ("redis://host:port?cluster=true&addr=...", see WithCluster), which an Addr
// cannot describe, whatever format is given.
func WithAddress(format func(Addr) string) RedisOption {
	return func(s *redisSuite) {
		if format != nil {
			s.format, s.custom = format, true
		}
	}
}

// hostAddr returns the address of srv without its credentials and TLS
// settings: its host and port.
func hostAddr(t *testing.T, srv *redistest.Server) Addr {
	t.Helper()
	host, port, err := net.SplitHostPort(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return Addr{Host: host, Port: port}
}

// fullAddr returns the address of srv with its password and, for a TLS
// server, its CA and client certificate.
func fullAddr(t *testing.T, srv *redistest.Server) Addr {
	t.Helper()
	a := hostAddr(t, srv)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := u.User.Password(); ok {
		a.Password = p
	}
	if c := srv.Certs(); c != nil {
		a.TLS, a.CAFile, a.CertFile, a.KeyFile = true, c.CAFile, c.ClientCertFile, c.ClientKeyFile
	}
	return a
}
