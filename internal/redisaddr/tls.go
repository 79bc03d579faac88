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
