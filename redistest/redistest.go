package redistest

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/go-redlock/redlock/internal/redisserver"
)

// Server is one redis-server process on a loopback port. Start one for a test
// with [NewServer] or [NewServers], or with [Start] and [Server.Close]
// elsewhere. Its methods are safe for concurrent use.
type Server redisserver.Server

// Server, Cluster, Shard and Migration are defined on the engine's types
// rather than aliases of them, so that go doc and pkg.go.dev show their
// methods (they show none of an alias of another package's type); a pointer
// converts to the engine's type and back, and each method calls the
// engine's. Certs and SlotRange have the engine's fields, so that they show
// them.

// Option configures a server started by [Start], [NewServer] or [NewServers].
type Option = redisserver.Option

// Certs is a small public key infrastructure for tests: a CA and a server and
// a client certificate it signed, as PEM files in one directory. Make it with
// [NewCerts] or [GenerateCerts] and give it to servers with [WithTLS]; every
// Certs has a CA of its own, so a client that trusts one Certs's CA refuses a
// server that uses another's certificate.
type Certs struct {
	// Dir holds the files.
	Dir string
	// CAFile is the CA's certificate, which signed the other two.
	CAFile string
	// ServerCertFile and ServerKeyFile are the server certificate, for the
	// names 127.0.0.1, ::1 and localhost, and its private key.
	ServerCertFile, ServerKeyFile string
	// ClientCertFile and ClientKeyFile are a client certificate, for servers
	// that require one (mutual TLS), and its private key.
	ClientCertFile, ClientKeyFile string
}

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
// the redis-server binary cannot be found. The error that wraps it says where
// it was looked for: on PATH, or as the REDISTEST_SERVER variable names it.
var ErrNotInstalled = redisserver.ErrNotInstalled

// Start starts a redis-server on a free port of 127.0.0.1 (of ::1 with
// [WithIPv6]) and waits until it
// answers PING. ctx bounds only the start, which also gives up after 10s; the
// server runs until [Server.Close]. It returns an error wrapping
// [ErrNotInstalled] if the redis-server binary cannot be found, and an error
// including the end of the server's log if it does not start.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	s, err := redisserver.Start(ctx, opts...)
	return (*Server)(s), err
}

// StartN starts n servers at once, as [Start] does each. If any fails, it
// closes the others and returns the errors joined (one wrapping
// [ErrNotInstalled] when the binary is missing, reported once).
func StartN(ctx context.Context, n int, opts ...Option) ([]*Server, error) {
	servers, err := redisserver.StartN(ctx, n, opts...)
	return serversOf(servers), err
}

// serversOf returns servers as this package's type.
func serversOf(servers []*redisserver.Server) []*Server {
	if servers == nil {
		return nil
	}
	s := make([]*Server, len(servers))
	for i, srv := range servers {
		s[i] = (*Server)(srv)
	}
	return s
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
// logfile, daemonize, requirepass and tls-port are managed by redistest and
// make [Start] fail, as do include (the file's directives could set them) and
// a value after the first that starts with "--", which redis-server would read
// as the name of another directive.
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
	return redisserver.WithTLS((*redisserver.Certs)(certs), clientCerts)
}

// GenerateCerts creates a new CA in dir and signs with it a server and a
// client certificate, all with ECDSA P-256 keys, valid from an hour ago for a
// day. It writes ca.pem, server.pem, server-key.pem, client.pem and
// client-key.pem; the keys are readable by their owner only.
func GenerateCerts(dir string) (*Certs, error) {
	c, err := redisserver.GenerateCerts(dir)
	return (*Certs)(c), err
}

// ClientConfig returns a TLS client configuration that trusts only c's CA and
// presents c's client certificate. The server name is left empty, for the
// dialer to fill in from the address.
func (c *Certs) ClientConfig() (*tls.Config, error) {
	return (*redisserver.Certs)(c).ClientConfig()
}

// Addrs returns the addresses of servers (or of proxies), in order.
func Addrs[S interface{ Addr() string }](servers []S) []string {
	return redisserver.Addrs(servers)
}

// Do sends one command to the server and returns its reply, for tests that
// inspect or change keys without a Redis driver:
//
//	srv.Do(ctx, "SET", "k", "v", "PX", "1000") // "OK", nil
//	srv.Do(ctx, "PTTL", "k")                   // int64(1000) or a little less, nil
//
// Replies are returned as string (simple and bulk strings), int64 (integers),
// nil (null), []any (arrays, whose error elements are RedisError values). An
// error reply is returned as a [RedisError] error. Every call opens a fresh TCP
// connection, authenticates first if the server has a password, and is
// abandoned when ctx is done; the error then wraps ctx.Err(). Without a
// deadline in ctx, Do against a paused server waits until it is resumed.
func (s *Server) Do(ctx context.Context, args ...string) (any, error) {
	return (*redisserver.Server)(s).Do(ctx, args...)
}

// Restart kills the server if it is running (SIGKILL, as in a crash) and
// starts it again at once on the same port, with the same configuration and
// directory, then waits until it answers PING; ctx bounds the start. What the
// new process remembers is what the configuration made durable: by default
// (no RDB snapshots, no AOF) it starts empty, as a crashed node without
// persistence does; with WithConfig("appendonly", "yes") and
// WithConfig("appendfsync", "always") it reloads every write it acknowledged
// before the crash, keys' expiry times included. Restart also starts a server
// that was killed with [Server.Kill]. It fails on a closed server.
func (s *Server) Restart(ctx context.Context) error {
	return (*redisserver.Server)(s).Restart(ctx)
}

// RestartAfter is [Server.Restart] with the server kept down for down before it
// starts again: the delayed restart that keeps a node without persistence
// from granting a lock it forgot, when down is longer than the longest TTL.
// The server is killed at once; RestartAfter returns once it answers again.
// While it is down, its port (and a cluster node's bus port) is held by a
// listener that resets every connection at once, so that no other server or
// proxy of the test binary can take the port meanwhile; to a client the
// server is as unreachable as a dead one. If ctx ends or the server is
// closed during the wait, RestartAfter returns then, the server stays down
// and the error says so.
func (s *Server) RestartAfter(ctx context.Context, down time.Duration) error {
	return (*redisserver.Server)(s).RestartAfter(ctx, down)
}

// Running reports whether the server's process is running (it may be
// paused): false after [Server.Kill], during the down time of
// [Server.RestartAfter], and after [Server.Close].
func (s *Server) Running() bool {
	return (*redisserver.Server)(s).Running()
}

// Addr returns the server's address, "127.0.0.1:PORT", or "[::1]:PORT" for a
// server started [WithIPv6].
func (s *Server) Addr() string {
	return (*redisserver.Server)(s).Addr()
}

// URL returns the server's address as a URL, "redis://127.0.0.1:PORT", or
// "redis://:PASSWORD@127.0.0.1:PORT" (the password escaped) if it has one
// ("[::1]" in place of 127.0.0.1 for a server started [WithIPv6]).
// A server started [WithTLS] has a "rediss://" URL whose query parameters
// tls_ca_file, tls_cert_file and tls_key_file name its [Certs] files, as the
// drivers of this module accept it.
func (s *Server) URL() string {
	return (*redisserver.Server)(s).URL()
}

// Close stops the server (SIGCONT if paused, SIGTERM, then SIGKILL if it has
// not exited after a short grace), waits for it and removes its directory. It
// is idempotent: later calls return the first call's result.
func (s *Server) Close() error {
	return (*redisserver.Server)(s).Close()
}

// Kill kills the server with SIGKILL, as in a crash, and waits for it to
// exit. Its directory is kept until [Server.Close], which is still needed.
// Until the server is restarted or closed, its port (and a cluster node's bus
// port) is held by a listener that resets every connection at once: to a
// client the node is as unreachable as a dead one, and no other server of the
// test binary can take the port and answer in its place. Killing a server
// that is not running does nothing.
func (s *Server) Kill() error {
	return (*redisserver.Server)(s).Kill()
}

// Pause stops the server process with SIGSTOP: it keeps its port, and the
// kernel still accepts TCP connections, but it answers nothing until
// [Server.Resume]. Pause returns once the process is stopped; pausing a
// paused server does nothing, and pausing one that is not running (killed or
// closed) fails.
func (s *Server) Pause() error {
	return (*redisserver.Server)(s).Pause()
}

// Resume continues a server stopped by [Server.Pause] with SIGCONT; it then
// answers the commands that queued up meanwhile. Resuming a running server
// that is not paused does nothing; resuming one that is not running (killed
// or closed) fails.
func (s *Server) Resume() error {
	return (*redisserver.Server)(s).Resume()
}

// Certs returns the certificates of a server started [WithTLS], or nil.
func (s *Server) Certs() *Certs {
	return (*Certs)((*redisserver.Server)(s).Certs())
}

// Unread returns how many bytes clients have sent the server that its
// process has not read yet, on connections it has accepted or not, and on
// those the clients have closed since: the requests queued while it is
// paused, which it will still execute when resumed. It reads /proc/net/tcp
// (/proc/net/tcp6 for a server started [WithIPv6]) and is supported on Linux
// only.
func (s *Server) Unread() (int, error) {
	return (*redisserver.Server)(s).Unread()
}
