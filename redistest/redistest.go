package redistest

import (
	"context"

	"github.com/go-redlock/redlock/internal/redisserver"
)

// Server is one redis-server process on a loopback port. Start one for a test
// with [NewServer] or [NewServers], or with [Start] and [Server.Close]
// elsewhere. Its methods are safe for concurrent use.
type Server = redisserver.Server

// Option configures a server started by [Start], [NewServer] or [NewServers].
type Option = redisserver.Option

// Certs is a small public key infrastructure for tests: a CA and a server and
// a client certificate it signed, as PEM files in one directory. Make it with
// [NewCerts] or [GenerateCerts] and give it to servers with [WithTLS].
type Certs = redisserver.Certs

// ClientCerts says whether a TLS server asks its clients for a certificate.
type ClientCerts = redisserver.ClientCerts

// RedisError is an error reply from the server to [Server.Do].
type RedisError = redisserver.RedisError

// The ways a TLS server treats client certificates (tls-auth-clients).
const (
	// ClientCertsRequired refuses a client without a valid certificate.
	ClientCertsRequired = redisserver.ClientCertsRequired
	// ClientCertsOptional accepts a client without a certificate and checks
	// one if given.
	ClientCertsOptional = redisserver.ClientCertsOptional
	// ClientCertsNo does not ask for a client certificate.
	ClientCertsNo = redisserver.ClientCertsNo
)

// InstallHint explains how to make redis-server available to this package.
const InstallHint = redisserver.InstallHint

// ErrNotInstalled is returned (wrapped; test with errors.Is) by [Start] when
// the redis-server binary cannot be found.
var ErrNotInstalled = redisserver.ErrNotInstalled

// Start starts a redis-server on a free port of 127.0.0.1 (of ::1 with
// [WithIPv6]) and waits until it
// answers PING. ctx bounds only the start, which also gives up after 10s; the
// server runs until [Server.Close]. It returns an error wrapping
// [ErrNotInstalled] if the redis-server binary cannot be found, and an error
// including the end of the server's log if it does not start.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	return redisserver.Start(ctx, opts...)
}

// StartN starts n servers at once, as [Start] does each. If any fails, it
// closes the others and returns the errors joined (one wrapping
// [ErrNotInstalled] when the binary is missing, reported once).
func StartN(ctx context.Context, n int, opts ...Option) ([]*Server, error) {
	return redisserver.StartN(ctx, n, opts...)
}

// WithPassword sets the server's password (the requirepass directive). [Server.Do]
// authenticates with it and [Server.URL] includes it. An empty password means
// none.
func WithPassword(pw string) Option { return redisserver.WithPassword(pw) }

// WithIPv6 makes the server listen on the IPv6 loopback address ::1 rather
// than on 127.0.0.1: its [Server.Addr] is "[::1]:PORT". Passed to a cluster
// through [WithServerOptions], it makes every node listen, meet the others and
// announce itself on ::1, so that CLUSTER NODES, CLUSTER SLOTS and MOVED
// replies name IPv6 addresses. [Start] fails if the machine has no ::1; see
// [SkipWithoutIPv6].
func WithIPv6() Option { return redisserver.WithIPv6() }

// WithConfig adds one configuration directive: its name, then its values, as
// in a redis.conf line. WithConfig("appendonly", "yes") passes
// "--appendonly yes" to redis-server, and WithConfig("save", "60", "1") passes
// "--save 60 1". Directives are applied after the defaults (including
// "save" "" and "appendonly" "no"), so they override them; use the option
// several times for several directives. The directives port, bind, dir,
// logfile, daemonize, requirepass and tls-port are managed by redistest and make
// [Start] fail.
func WithConfig(directive ...string) Option { return redisserver.WithConfig(directive...) }

// WithTLS makes the server accept only TLS connections on its port (it is
// started with --port 0 and --tls-port PORT), with certs's server certificate,
// trusting certs's CA for client certificates, which clients must present
// according to clientCerts. [Server.Do] and the readiness probe connect with
// TLS, presenting certs's client certificate; [Server.URL] returns a
// rediss:// address that carries certs's files (see its documentation), and
// [Server.Certs] returns certs.
//
// It needs a redis-server built with TLS, as Debian's and Ubuntu's are.
func WithTLS(certs *Certs, clientCerts ClientCerts) Option {
	return redisserver.WithTLS(certs, clientCerts)
}

// GenerateCerts creates a new CA in dir and signs with it a server and a
// client certificate, all with ECDSA P-256 keys, valid from an hour ago for a
// day. It writes ca.pem, server.pem, server-key.pem, client.pem and
// client-key.pem; the keys are readable by their owner only.
func GenerateCerts(dir string) (*Certs, error) { return redisserver.GenerateCerts(dir) }

// Addrs returns the addresses of servers (or of proxies), in order.
func Addrs[S interface{ Addr() string }](servers []S) []string {
	return redisserver.Addrs(servers)
}
