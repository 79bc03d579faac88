package redisaddr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

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
		pem, err := os.ReadFile(a.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls_ca_file %s: no PEM certificate in it", a.TLSCAFile)
		}
		cfg.RootCAs = pool
	}
	if a.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(a.TLSCertFile, a.TLSKeyFile)
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
