package driver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"

	"github.com/go-redlock/redlock/internal/replyerr"
	"github.com/go-redlock/redlock/internal/tlsdial"
)

// permanentCodes are the Redis error codes that retrying cannot fix: the
// server or the user's rights must change first.
var permanentCodes = [...]string{
	"NOAUTH",    // authentication required
	"WRONGPASS", // wrong user name or password
	"NOPERM",    // the ACL user may not run the command or touch the key
	"WRONGTYPE", // the key holds a value of another type
	"OOM",       // used memory over maxmemory, with a policy that evicts nothing
	"READONLY",  // the server is a read-only replica
}

// permanentERR are the replies with the generic code ERR that retrying cannot
// fix, which a connection's handshake gets when the address names a database
// the server does not have (SELECT 99 with the default 16 databases), or any
// database but 0 on a server in cluster mode, and a command gets when the
// server does not have it: disabled or renamed with rename-command in
// redis.conf (EVAL, EVALSHA), or when it is a cluster's (a node given as a
// Redis Cluster, cluster=true) and the server is not cluster-enabled; only a
// restart with another configuration undoes them. Some clients drop the code of an ERR reply (rueidis
// and valkey-go keep "DB index is out of range"), so they are recognized
// with or without it.
var permanentERR = [...]string{
	"ERR DB index is out of range",
	"ERR SELECT is not allowed in cluster mode",
	"ERR unknown command",
	"ERR This instance has cluster support disabled",
	// The fencing scripts' reply when the counter in use holds no decimal
	// number of 64 bits (set by hand, or a lock named as the counter):
	// every fenced acquisition of its slot would fail the same way.
	"ERR fencing counter holds no number",
}

// ErrSeedsOfTwoClusters is in the error of every call on a node given as a
// Redis Cluster (redis://SEED?cluster=true&addr=SEED2...) whose seeds are
// nodes of two different clusters: two seeds answered CLUSTER SLOTS with no
// node ID in common. The cluster clients read the slot map from a seed taken
// at random, so Clients given that address could lock on different clusters
// and two of them hold one lock: the drivers refuse such a node, for good,
// before any lock command is sent through it. Only another address (the
// seeds of one cluster) fixes it; PermanentCode returns its message.
var ErrSeedsOfTwoClusters = errors.New("seeds of two clusters")

// ErrNilClient is in the error of every call on a node that a driver's
// constructor over a client of the caller's (goredis.New, redigo.New,
// rueidis.New, valkeygo.New) was given a nil client or pool: the node has
// nothing to send its commands through, and no retry gives it one.
// PermanentCode returns "nil client" for it.
var ErrNilClient = errors.New("nil client")

// The codes PermanentCode returns for a TLS handshake that failed on a
// certificate: the client did not trust the server's (an unknown CA, another
// host name, expired: a tls_ca_file or tls_server_name to fix, or the
// server's certificate), or the server refused the client's (none given, or
// one its CA did not sign: tls_cert_file and tls_key_file to fix). No retry
// makes either pass until someone changes a certificate or the
// configuration, as no retry makes a wrong password right.
const (
	tlsServerCertificate = "TLS: the server's certificate is not trusted"
	tlsClientCertificate = "TLS: the server refused the client's certificate"
)

// tlsVersion is the code PermanentCode returns for a TLS handshake that
// failed because the client and the server accept no common protocol
// version (the client's tls.Config MinVersion and MaxVersion, the server's
// tls-protocols): a configuration to fix, as a certificate is.
const tlsVersion = "TLS: no protocol version both sides accept"

// noClientCert is how the drivers' TLS connections name, in their errors, a
// server that asked for a client certificate and got none.
const noClientCert = "(" + tlsdial.NoClientCertHint + ")"

// tlsNoVersions is crypto/tls's error for a client's tls.Config whose
// MinVersion and MaxVersion leave no version it supports, and
// tlsVersionAlert the alert of a server that accepts none the client offers.
const (
	tlsNoVersions   = "tls: no supported versions satisfy MinVersion and MaxVersion"
	tlsVersionAlert = "protocol version not supported"
)

// certificateAlerts are the TLS alerts (crypto/tls's texts) by which a
// server refuses the client's certificate during the handshake.
var certificateAlerts = [...]string{
	"bad certificate", "unsupported certificate", "revoked certificate", "expired certificate",
	"unknown certificate", "unknown certificate authority", "certificate required", "access denied",
}

// tlsCertificateCode returns tlsServerCertificate or tlsClientCertificate
// when err says that a TLS handshake failed on a certificate, tlsVersion
// when it failed for want of a common protocol version, or "".
func tlsCertificateCode(err error) string {
	var (
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		he x509.HostnameError
		ci x509.CertificateInvalidError
	)
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		return tlsServerCertificate
	}
	if replyerr.Find(err, func(msg string) bool { return msg == tlsNoVersions }) {
		return tlsVersion
	}
	// A server that requires a client certificate and got none may close
	// the connection before the client reads its alert: the drivers' TLS
	// connections (package tlsdial) then add NoClientCertHint to the
	// connection's error, a reset.
	if replyerr.Find(err, func(msg string) bool { return strings.Contains(msg, noClientCert) }) {
		return tlsClientCertificate
	}
	// crypto/tls gives a peer's alert as a *net.OpError of Op "remote
	// error" whose Err is the alert, "tls: bad certificate", say.
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || oe.Err == nil {
		return ""
	}
	alert, ok := strings.CutPrefix(oe.Err.Error(), "tls: ")
	if !ok {
		return ""
	}
	if alert == tlsVersionAlert {
		return tlsVersion
	}
	for _, a := range certificateAlerts {
		if alert == a {
			return tlsClientCertificate
		}
	}
	return ""
}

// PermanentCode returns the code of a Redis error reply found in err's chain
// (errors.Unwrap, including joined errors) that retrying cannot fix —
// "NOAUTH", "WRONGPASS", "NOPERM", "WRONGTYPE", "OOM" or "READONLY" — and ""
// when there is none. "NOPERM" includes the refusal of a command that a
// script calls, which Redis 7.0 replies with the code ERR ("ERR The user
// executing the script can't run this command or subcommand"). For an ERR reply that retrying cannot fix, a database
// the server does not have ("ERR DB index is out of range", "ERR SELECT is
// not allowed in cluster mode"), a command it does not have ("ERR unknown
// command": rename-command in redis.conf), or a cluster's command on a server
// that is not cluster-enabled ("ERR This instance has cluster support
// disabled": a node given as a Redis Cluster, cluster=true), it returns that
// reply's start. For a Redis Cluster's redirection that a node given as one
// server got ([ErrClusterServer], see [OneServerError]) it returns the
// redirection's code, "MOVED" or "ASK"; the same replies to a node that is a
// Redis Cluster, whose client follows them, pass. An error reply is recognized by its message, which
// starts with its code, whatever type the client gives it; an error that
// wraps it may add a prefix, as long as it wraps with %w. A script's error
// reply counts too, since Redis keeps the code of an error raised by
// redis.call.
//
// For an error that matches ErrSeedsOfTwoClusters (errors.Is), a driver's
// refusal of a cluster node whose seeds are of two clusters, it returns
// that error's message, "seeds of two clusters"; for one that matches
// ErrNilClient, a node made over a nil client, "nil client". For a TLS
// handshake that failed on a certificate it returns "TLS: the server's
// certificate is not trusted" (a *tls.CertificateVerificationError or an
// x509 UnknownAuthorityError, HostnameError or CertificateInvalidError in
// the chain) or "TLS: the server refused the client's certificate" (the
// server's certificate alert: "remote error: tls: bad certificate",
// "certificate required", "unknown certificate authority", ...), or a
// connection's error that the drivers' TLS connections marked as that of a
// server that asked for a client certificate and got none (a TLS 1.3 server
// refuses it after the client's side of the handshake, and may close the
// connection before the client reads its alert: the client then hears a
// reset). A client certificate of another CA, refused so, gives no such
// error. For a handshake that failed for want of a TLS version both sides
// accept it returns "TLS: no protocol version both sides accept"
// (crypto/tls's "tls: no supported versions satisfy MinVersion and
// MaxVersion" of the client's tls.Config, or the server's alert "protocol
// version not supported").
//
// Package redlock uses it to stop retrying when so many nodes answer such
// errors that no quorum is possible. A driver needs nothing more than to keep
// the client's error in the chain of the error it returns, through
// [OneServerError] for a node that is one server.
func PermanentCode(err error) string {
	if errors.Is(err, ErrSeedsOfTwoClusters) {
		return ErrSeedsOfTwoClusters.Error()
	}
	if errors.Is(err, ErrNilClient) {
		return ErrNilClient.Error()
	}
	if err == nil {
		return ""
	}
	if code := tlsCertificateCode(err); code != "" {
		return code
	}
	var code string
	replyerr.Find(err, func(msg string) bool {
		code = replyCode(msg)
		return code != ""
	})
	if code == "" && errors.Is(err, ErrClusterServer) {
		if code = redirectCode(err); code == "" {
			code = "MOVED" // a driver's ErrClusterServer without the reply
		}
	}
	return code
}

// CommandRefused reports whether err says that the server refuses the one
// command that got it, for good, while it may run others: the ACL user may
// not run it (PermanentCode "NOPERM") or the server does not have it (renamed
// away with rename-command: "ERR unknown command"). A node that fails every
// command for good (WRONGPASS, a database it does not have) is not refusing
// one. Package redlock and the redlock command use it for the identity
// question (INFO), whose refusal leaves the node's locks working.
func CommandRefused(err error) bool {
	code := PermanentCode(err)
	return code == "NOPERM" || code == "ERR unknown command"
}

// scriptACL starts the reply of Redis 7.0 to a command that a script calls
// and that the ACL user may not run, or on a key or channel the user may not
// touch ("ERR The user executing the script can't run this command or
// subcommand", "... can't access at least one of the keys mentioned in the
// command arguments", "... can't publish to the channel mentioned in the
// command"): NOPERM under another code, as only a change of the user's
// rights fixes it.
const scriptACL = "ERR The user executing the script can't "

// replyCode returns msg's first word if it is a permanent code, "NOPERM" for
// a script's ACL refusal (scriptACL), or msg's start if it is one of
// permanentERR, each with or without its code.
func replyCode(msg string) string {
	if strings.HasPrefix(msg, scriptACL) || strings.HasPrefix(msg, scriptACL[len("ERR "):]) {
		return "NOPERM"
	}
	for _, reply := range permanentERR {
		if strings.HasPrefix(msg, reply) || strings.HasPrefix(msg, reply[len("ERR "):]) {
			return reply
		}
	}
	word, _, _ := strings.Cut(msg, " ")
	for _, code := range permanentCodes {
		if word == code {
			return code
		}
	}
	return ""
}
