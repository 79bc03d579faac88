package redisaddr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"
)

// maxPEMFile is the most TLSConfig reads of a CA, certificate or key file:
// far more than a CA bundle (Debian's, of every public CA, is about 220 KB),
// and a bound when the path names something without an end (/dev/zero, a
// pipe a program writes into forever), which would otherwise be read until
// the process runs out of memory.
const maxPEMFile = 8 << 20

// pipeWait bounds the read of a CA, certificate or key file that is not a
// regular file: a pipe (a FIFO, or bash's process substitution <(cmd)) may
// have no writer yet, or one that never writes, and Open has no context to
// bound it by. A variable for the tests.
var pipeWait = 10 * time.Second

// readPEMFile reads the file at path, of the address's parameter param, up
// to maxPEMFile bytes: a longer one is an error that says so. A regular file
// is read as it is; on unix anything else (a pipe, a device) is opened
// without waiting for a writer and read for at most pipeWait (see
// pemfile_unix.go).
func readPEMFile(param, path string) ([]byte, error) {
	b, err := readFile(path, maxPEMFile+1, pipeWait)
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return nil, fmt.Errorf("%s: %w", param, err)
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) && len(b) == 0:
		return nil, fmt.Errorf("%s %s: nothing to read after %v (a pipe with no writer, or one its writer closed empty?)", param, path, pipeWait)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("%s %s: no end of file after %v (%d bytes read)", param, path, pipeWait, len(b))
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", param, path, err)
	case len(b) > maxPEMFile:
		return nil, fmt.Errorf("%s %s: longer than %d MiB: no certificate or key file is", param, path, maxPEMFile>>20)
	}
	return b, nil
}

// TLSConfig returns the TLS configuration for connecting to a: nil when a is
// not rediss:// and base is nil (a plain TCP connection); otherwise a copy of
// base (or a new configuration, TLS 1.2 at least) with the address's CA file,
// client certificate and server name applied. The server name defaults to the
// host.
func (a Addr) TLSConfig(base *tls.Config) (*tls.Config, error) {
	if !a.TLS && base == nil {
		return nil, nil
	}
	var cfg *tls.Config
	if base != nil {
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if a.TLSCAFile != "" {
		pem, err := readPEMFile("tls_ca_file", a.TLSCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca_file %s: no PEM certificate in it", a.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if a.TLSCertFile != "" {
		certPEM, err := readPEMFile("tls_cert_file", a.TLSCertFile)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readPEMFile("tls_key_file", a.TLSKeyFile)
		if err != nil {
			return nil, err
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("tls_cert_file/tls_key_file: %w", err)
		}
		// Replace, not append: the clone shares base's slice, and the
		// address's certificate must be the one presented.
		cfg.Certificates = []tls.Certificate{cert}
	}
	switch {
	case a.TLSServerName != "":
		cfg.ServerName = a.TLSServerName
	case cfg.ServerName == "":
		cfg.ServerName = a.Host
	}
	if cfg.ServerName == "" {
		return nil, errors.New("no TLS server name")
	}
	return cfg, nil
}

// ParseTLS parses addr and returns it with its TLS configuration: nil for a
// plain connection; with base set, TLS for any address form (see TLSConfig).
// The returned Addr's TLS field says whether the node uses TLS, so that its
// String names it rediss://. Errors never contain the password.
func ParseTLS(addr string, base *tls.Config) (Addr, *tls.Config, error) {
	a, err := Parse(addr)
	if err != nil {
		return Addr{}, nil, err
	}
	cfg, err := a.TLSConfig(base)
	if err != nil {
		return Addr{}, nil, fmt.Errorf("%s: %w", a, err)
	}
	a.TLS = cfg != nil
	return a, cfg, nil
}

// ParseNodeTLS is [ParseTLS] for an address that may name a Redis Cluster
// (see [ParseNode]). A cluster's nodes share the one TLS configuration
// returned, whose server name is tls_server_name if given, else the host of
// the URL (the first seed).
func ParseNodeTLS(addr string, base *tls.Config) (Node, *tls.Config, error) {
	n, err := ParseNode(addr)
	if err != nil {
		return Node{}, nil, err
	}
	cfg, err := n.TLSConfig(base)
	if err != nil {
		return Node{}, nil, fmt.Errorf("%s: %w", n, err)
	}
	n.TLS = cfg != nil
	return n, cfg, nil
}
