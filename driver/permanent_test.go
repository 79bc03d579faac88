package driver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
)

// replyError is an error reply as a client might type it.
type replyError string

func (e replyError) Error() string { return string(e) }

func TestPermanentCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("WRONGPASS invalid username-password pair or user is disabled."), "WRONGPASS"},
		{replyError("NOAUTH Authentication required."), "NOAUTH"},
		{fmt.Errorf("goredis: SET NX: %w", replyError("NOPERM User u has no permissions to run the 'set' command")), "NOPERM"},
		{fmt.Errorf("rueidis: extend: %w", errors.New("WRONGTYPE Operation against a key holding the wrong kind of value script: 1b2c")), "WRONGTYPE"},
		{errors.Join(context.DeadlineExceeded, fmt.Errorf("x: %w", errors.New("OOM command not allowed when used memory > 'maxmemory'."))), "OOM"},
		{fmt.Errorf("%w: %w", context.Canceled, errors.New("READONLY You can't write against a read only replica.")), "READONLY"},
		{errors.New("ERR unknown subcommand 'X'. Try CLIENT HELP."), ""},
		{fmt.Errorf("goredis: extend: %w", replyError("ERR unknown command 'EVALSHA', with args beginning with: 'b100f71f' '1' 'k'")), "ERR unknown command"},
		{fmt.Errorf("rueidis: extend: %w", replyError("unknown command 'EVALSHA', with args beginning with: 'b100f71f' '1' 'k'")), "ERR unknown command"},
		{fmt.Errorf("redigo: dial: %w", replyError("ERR DB index is out of range")), "ERR DB index is out of range"},
		{replyError("ERR SELECT is not allowed in cluster mode"), "ERR SELECT is not allowed in cluster mode"},
		{fmt.Errorf("rueidis: connect: %w", replyError("DB index is out of range")), "ERR DB index is out of range"},
		{replyError("ERR fencing counter holds no number: lock:redlock:fence:{12}"), "ERR fencing counter holds no number"},
		{replyError("fencing counter holds no number: redlock:fence:{0}"), "ERR fencing counter holds no number"},
		{errors.New("ERR DB index is out"), ""},
		{fmt.Errorf("goredis: SET NX: slot 1: %w", replyError("ERR This instance has cluster support disabled")), "ERR This instance has cluster support disabled"},
		{errors.Join(context.DeadlineExceeded, fmt.Errorf("goredis: SET NX: %w", fmt.Errorf("%w: 127.0.0.1:1 and 127.0.0.1:2 ...", driver.ErrSeedsOfTwoClusters))), "seeds of two clusters"},
		{errors.New("seeds of two clusters"), ""}, // the sentinel, not its words
		// Redis 7.0's refusals of what a script calls, as redigo and
		// go-redis give them (with ERR) and rueidis (without).
		{fmt.Errorf("goredis: extend: %w", replyError("ERR The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4.")), "NOPERM"},
		{fmt.Errorf("rueidis: extend: %w", replyError("The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4.")), "NOPERM"},
		{replyError("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: fa24ae18, on @user_script:1."), "NOPERM"},
		{replyError("ERR The user executing the script can't publish to the channel mentioned in the command script: 1b2c, on @user_script:6."), "NOPERM"},
		{errors.New("ERR The user executing the script"), ""},
		{errors.New("LOADING Redis is loading the dataset in memory"), ""},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), ""},
		{errors.New("a message that mentions WRONGPASS later"), ""},
		{errors.New("WRONGPASSWORD is not a code"), ""},
	} {
		if got := driver.PermanentCode(tc.err); got != tc.want {
			t.Errorf("PermanentCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// CommandRefused is true for a refusal of the one command (NOPERM, also as
// Redis 7.0 words it for a script's call; a command renamed away), and
// false for an error of every command (WRONGPASS, a database the server does
// not have), a transient error, and nil.
func TestCommandRefused(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("goredis: identity: %w", replyError("NOPERM User noinfo has no permissions to run the 'info' command")), true},
		{replyError("ERR The user executing the script can't run this command or subcommand script: b100f71f, on @user_script:4."), true},
		{replyError("ERR unknown command 'INFO', with args beginning with: 'server' "), true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), false},
		{replyError("ERR DB index is out of range"), false},
		{errors.New("i/o timeout"), false},
		{nil, false},
	} {
		if got := driver.CommandRefused(c.err); got != c.want {
			t.Errorf("CommandRefused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A Redis Cluster's redirection (MOVED, ASK) that a node given as one server
// got is an error retrying cannot fix once OneServerError marks it, which
// says why; unmarked (a cluster node's client follows them, and one left
// over passes), it is not. Other errors, and nil, pass unchanged.
func TestOneServerError(t *testing.T) {
	moved := replyError("MOVED 866 127.0.0.1:7001")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("goredis: SET NX: %w", moved), "MOVED"},
		{fmt.Errorf("redigo: extend: %w", replyError("ASK 866 127.0.0.1:7001")), "ASK"},
		{fmt.Errorf("%w: %w", context.DeadlineExceeded, moved), "MOVED"},
	} {
		if got := driver.PermanentCode(tc.err); got != "" {
			t.Errorf("PermanentCode(%v) = %q unmarked, want \"\"", tc.err, got)
		}
		err := driver.OneServerError(tc.err)
		if got := driver.PermanentCode(err); got != tc.want {
			t.Errorf("PermanentCode(OneServerError(%v)) = %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(err, driver.ErrClusterServer) || !errors.Is(err, tc.err) {
			t.Errorf("OneServerError(%v) = %v: want it to match ErrClusterServer and the error", tc.err, err)
		}
		if want := tc.err.Error() + ": " + driver.ErrClusterServer.Error(); err.Error() != want {
			t.Errorf("OneServerError(%v) says %q, want %q", tc.err, err, want)
		}
		if again := driver.OneServerError(fmt.Errorf("redlock: %w", err)); again.Error() != "redlock: "+err.Error() {
			t.Errorf("OneServerError of an error it marked says %q, want it unchanged", again)
		}
		// A reply that retrying cannot fix, joined before, is found first.
		if got := driver.PermanentCode(errors.Join(replyError("NOPERM no"), err)); got != "NOPERM" {
			t.Errorf("PermanentCode of NOPERM joined with %v = %q, want NOPERM", err, got)
		}
	}
	if got := driver.PermanentCode(fmt.Errorf("x: %w", driver.ErrClusterServer)); got != "MOVED" {
		t.Errorf("PermanentCode(ErrClusterServer alone) = %q, want MOVED", got)
	}
	for _, err := range []error{
		nil,
		errors.New("dial tcp 127.0.0.1:1: connect: connection refused"),
		replyError("TRYAGAIN Multiple keys request during rehashing of slot"),
		errors.New("a message that mentions MOVED later"),
		replyError("MOVEDX 1 h:1"),
	} {
		if got := driver.OneServerError(err); got != err {
			t.Errorf("OneServerError(%v) = %v, want it unchanged", err, got)
		}
	}
}

// The error of a node made over a nil client (every driver's, through
// drivernode.NilClientError) is one that retrying cannot fix.
func TestPermanentCodeNilClient(t *testing.T) {
	err := fmt.Errorf("call: %w", drivernode.NilClientError("goredis", "client"))
	if !errors.Is(err, driver.ErrNilClient) {
		t.Fatalf("errors.Is(%v, ErrNilClient) = false", err)
	}
	if got := driver.PermanentCode(err); got != "nil client" {
		t.Fatalf("PermanentCode(%v) = %q, want %q", err, got, "nil client")
	}
	if got := driver.PermanentCode(errors.New("goredis: New was given a nil client")); got != "" {
		t.Fatalf("PermanentCode of a text alike = %q, want \"\": only the error matching ErrNilClient counts", got)
	}
}

// A TLS handshake that failed on a certificate is an error retrying cannot
// fix, as a wrong password is: the server's certificate not trusted (the
// client's verification: an unknown CA, another host name, expired), or
// the client's refused by the server (its alert). Other TLS and network
// failures are not.
func TestPermanentCodeTLSCertificate(t *testing.T) {
	const server, client = "TLS: the server's certificate is not trusted", "TLS: the server refused the client's certificate"
	const version = "TLS: no protocol version both sides accept"
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"verification, unknown CA", fmt.Errorf("goredis: SET NX: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), server},
		{"unknown CA alone", fmt.Errorf("redigo: dial: %w", x509.UnknownAuthorityError{}), server},
		{"host name", errors.Join(context.DeadlineExceeded, x509.HostnameError{Host: "redis.example"}), server},
		{"expired", &tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}, server},
		{"client certificate required", fmt.Errorf("goredis: SET NX: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}), client},
		{"client certificate of another CA", fmt.Errorf("redigo: SET NX: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: unknown certificate authority")}), client},
		{"bad client certificate", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, client},
		{"another alert", &net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}, ""},
		{"a reset after no client certificate was given", fmt.Errorf("rueidis: SET NX: %w", errors.New("write tcp 127.0.0.1:1->127.0.0.1:2: write: connection reset by peer (the server asked for a client certificate and none was given (tls_cert_file and tls_key_file, or the tls.Config's Certificates): a server that requires one closes the connection)")), client},
		{"no version the client's MinVersion and MaxVersion allow", fmt.Errorf("rueidis: SET NX: %w", errors.New("tls: no supported versions satisfy MinVersion and MaxVersion")), version},
		{"no version the server accepts", fmt.Errorf("goredis: dial: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: protocol version not supported")}), version},
		{"the words inside a longer message", errors.New("x: tls: no supported versions satisfy MinVersion and MaxVersion"), ""},
		{"an alert's name extended", &net.OpError{Op: "remote error", Err: errors.New("tls: unknown certificates")}, ""},
		{"plaintext server", errors.New("tls: first record does not look like a TLS handshake"), ""},
		{"reset", errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"), ""},
		{"a reply that quotes the words", replyError("ERR remote error: tls: bad certificate"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := driver.PermanentCode(tc.err); got != tc.want {
				t.Errorf("PermanentCode(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}
