package conformance_test

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// This file is a whole-file example: the conformance tests of two drivers.
// In a driver's own package each test function below is a
// func TestConformance(t *testing.T); here TestExample (conformance_test.go)
// runs them.

// A Redis driver proves itself with RunRedis, which starts its own
// redis-server processes. A driver whose addresses are written in the form
// of this module's drivers ("host:port", "redis://user:password@host:port/db",
// rediss:// with tls_* parameters) passes just its Driver:
//
//	conformance.RunRedis(t, mydriver.Driver{})
//
// queryDriver writes its addresses its own way, as a query string
// ("addr=host:port&password=...&db=2"), so its test tells RunRedis how, with
// WithAddress. (It opens its nodes with the goredis driver, to stay short.)
type queryDriver struct{}

func (queryDriver) Open(addr string) (driver.Node, error) {
	u, err := queryURL(addr)
	if err != nil {
		return nil, err
	}
	return goredis.Driver{}.Open(u)
}

// OpenConfig makes queryDriver a driver.ConfigOpener, which RunRedis tests
// too.
func (queryDriver) OpenConfig(addr string, cfg driver.Config) (driver.Node, error) {
	u, err := queryURL(addr)
	if err != nil {
		return nil, err
	}
	return goredis.Driver{}.OpenConfig(u, cfg)
}

// queryURL turns queryDriver's address into goredis's. Its error never shows
// the address, which may hold a password.
func queryURL(addr string) (string, error) {
	q, err := url.ParseQuery(addr)
	if err != nil || q.Get("addr") == "" {
		return "", errors.New("querydriver: malformed address")
	}
	u := url.URL{Scheme: "redis", Host: q.Get("addr")}
	if q.Has("user") || q.Has("password") {
		u.User = url.UserPassword(q.Get("user"), q.Get("password"))
	}
	if db := q.Get("db"); db != "" {
		u.Path = "/" + db
	}
	if q.Get("tls") == "1" {
		u.Scheme = "rediss"
		u.RawQuery = url.Values{"tls_ca_file": {q.Get("ca")}, "tls_cert_file": {q.Get("cert")}, "tls_key_file": {q.Get("key")}}.Encode()
	}
	return u.String(), nil
}

// queryAddress writes a server RunRedis started as queryDriver's address.
func queryAddress(a conformance.Addr) string {
	q := url.Values{"addr": {net.JoinHostPort(a.Host, a.Port)}}
	for name, v := range map[string]string{"user": a.Username, "password": a.Password, "ca": a.CAFile, "cert": a.CertFile, "key": a.KeyFile} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if a.DB != 0 {
		q.Set("db", strconv.Itoa(a.DB))
	}
	if a.TLS {
		q.Set("tls", "1")
	}
	return q.Encode()
}

// testQueryDriver is queryDriver's conformance test.
func testQueryDriver(t *testing.T) {
	conformance.RunRedis(t, queryDriver{}, conformance.WithAddress(queryAddress))
}

// A node that is not opened by address, or a driver that cannot use
// RunRedis, runs Run with a function that returns a fresh node on a server of
// its own: the Redlock subtest makes a redlock.Client of three nodes, which
// refuses two nodes on one server.
func testNodes(t *testing.T) {
	conformance.Run(t, func(t *testing.T) driver.Node {
		srv := redistest.NewServer(t) // stopped at the end of the test
		n, err := goredis.Driver{}.Open(srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	})
}

func Example() {
	// See testQueryDriver and testNodes above: each is a driver's
	// conformance test, which runs under go test.
}
