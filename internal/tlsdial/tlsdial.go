// Package tlsdial dials the TLS connections of the Redis drivers (and of the
// redlock command's status and doctor, through package keystatus).
//
// The TLS handshake is bounded by the dial's context, unlike the handshakes
// of go-redis's and redigo's own dialers, so that a stalled server holds no
// call beyond its context. And a refusal for want of a client certificate is
// reported as one: with TLS 1.3 the client finishes its handshake before the
// server checks the client's certificate, so a server that requires one and
// got none closes the connection only once the client writes, and the client
// sees a reset connection or an end of file, often before the server's
// "certificate required" alert. When the server asked for a certificate and
// the client had none, the connection's read and write errors say so, until
// the server first answers. A handshake that the server ends by closing the
// connection, without an alert, says so too, and names the likely cause: a
// Redis server at its maxclients limit, which refuses a TLS connection
// without a word.
package tlsdial

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"

	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/lastwords"
)

// NoClientCertHint is appended to the errors of a connection on which the
// server asked for a client certificate and none was given, until the server
// first answers.
const NoClientCertHint = "the server asked for a client certificate and none was given " +
	"(tls_cert_file and tls_key_file, or the tls.Config's Certificates): " +
	"a server that requires one closes the connection"

// ClosedInHandshakeHint is appended to the error of a TLS handshake that
// the server ended by closing or resetting the connection, without a TLS
// alert: the error alone says "EOF" or "connection reset by peer". A Redis
// server at its maxclients limit does so, as it refuses a TLS connection
// before its handshake and writes it nothing (over plain TCP it writes
// "-ERR max number of clients reached", which package lastwords names).
const ClosedInHandshakeHint = "the server closed the connection during the TLS handshake, without a TLS alert; " +
	"a Redis server that has reached its maxclients limit does so"

// Dial connects to addr over network with d and runs the TLS handshake with
// cfg, whose ServerName must be set; ctx bounds both, and so does d's
// Timeout. cfg is not modified.
func Dial(ctx context.Context, d *net.Dialer, network, addr string, cfg *tls.Config) (net.Conn, error) {
	var asked atomic.Bool
	if len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil {
		cfg = cfg.Clone()
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			return &tls.Certificate{}, nil // none: the server decides whether that will do
		}
	}
	td := tls.Dialer{NetDialer: d, Config: cfg}
	conn, err := td.DialContext(ctx, network, addr)
	if connalive.Broken(err) {
		// The connection was made (a refused or unreachable one is
		// neither an end of file nor a reset): the server closed it in
		// the handshake without an alert.
		return nil, lastwords.Hint(err, ClosedInHandshakeHint)
	}
	if err != nil {
		return nil, err
	}
	if asked.Load() {
		return &noCertConn{Conn: conn}, nil
	}
	return conn, nil
}

// noCertConn is a TLS connection on which the server asked for a client
// certificate and got none. Its errors carry NoClientCertHint until a read
// returns data: by then the server has accepted the connection.
type noCertConn struct {
	net.Conn
	answered atomic.Bool
}

func (c *noCertConn) explain(err error) error {
	if err == nil || c.answered.Load() {
		return err
	}
	if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
		return err // a deadline, not a refusal
	}
	return lastwords.Hint(err, NoClientCertHint)
}

func (c *noCertConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, c.explain(err)
}

func (c *noCertConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, c.explain(err)
}

// NetConn returns the *tls.Conn, for clients that look through wrappers.
func (c *noCertConn) NetConn() net.Conn { return c.Conn }
