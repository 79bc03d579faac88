package redisserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Certs is a small public key infrastructure for tests: a certificate
// authority (CA) and a server and a client certificate it signed, as PEM files
// in one directory. Make it with [GenerateCerts] (or redistest.NewCerts) and give it to
// servers with [WithTLS]; every Certs has a CA of its own, so a client that
// trusts one Certs's CA refuses a server that uses another's certificate.
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

// GenerateCerts creates a new CA in dir and signs with it a server and a
// client certificate, all with ECDSA P-256 keys, valid from an hour ago for a
// day. It writes ca.pem, server.pem, server-key.pem, client.pem and
// client-key.pem; the keys are readable by their owner only.
func GenerateCerts(dir string) (*Certs, error) {
	fail := func(err error) (*Certs, error) {
		return nil, fmt.Errorf("redistest: generate certificates: %w", err)
	}
	c := &Certs{
		Dir:            dir,
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	template := func(cn string) (*x509.Certificate, error) {
		serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		if err != nil {
			return nil, err
		}
		return &x509.Certificate{
			SerialNumber: serial,
			Subject:      pkix.Name{Organization: []string{"redistest"}, CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}, nil
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fail(err)
	}
	caTmpl, err := template("redistest CA")
	if err != nil {
		return fail(err)
	}
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fail(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fail(err)
	}
	if err := writePEM(c.CAFile, "CERTIFICATE", caDER, 0o644); err != nil {
		return fail(err)
	}

	leaf := func(certFile, keyFile string, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writePEM(keyFile, "PRIVATE KEY", keyDER, 0o600)
	}
	srvTmpl, err := template("redistest server")
	if err != nil {
		return fail(err)
	}
	srvTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	srvTmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	srvTmpl.DNSNames = []string{"localhost"}
	if err := leaf(c.ServerCertFile, c.ServerKeyFile, srvTmpl); err != nil {
		return fail(err)
	}
	cliTmpl, err := template("redistest client")
	if err != nil {
		return fail(err)
	}
	cliTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if err := leaf(c.ClientCertFile, c.ClientKeyFile, cliTmpl); err != nil {
		return fail(err)
	}
	return c, nil
}

func writePEM(name, blockType string, der []byte, perm os.FileMode) error {
	return os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), perm)
}

// ClientConfig returns a TLS client configuration that trusts only c's CA and
// presents c's client certificate. The server name is left empty, for the
// dialer to fill in from the address.
func (c *Certs) ClientConfig() (*tls.Config, error) {
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("redistest: no certificate in %s", c.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      pool,
		Certificates: []tls.Certificate{cert},
	}, nil
}

// ClientCerts is what a server started [WithTLS] asks of its clients: the
// redis-server directive tls-auth-clients.
type ClientCerts int

// The values of ClientCerts.
const (
	// ClientCertsRequired refuses a client without a certificate signed by
	// the CA (tls-auth-clients yes): mutual TLS.
	ClientCertsRequired ClientCerts = iota
	// ClientCertsOptional accepts a client without a certificate, and checks
	// one if given (tls-auth-clients optional).
	ClientCertsOptional
	// ClientCertsNo does not ask for a client certificate
	// (tls-auth-clients no).
	ClientCertsNo
)

func (cc ClientCerts) directive() (string, error) {
	switch cc {
	case ClientCertsRequired:
		return "yes", nil
	case ClientCertsOptional:
		return "optional", nil
	case ClientCertsNo:
		return "no", nil
	}
	return "", fmt.Errorf("redistest: WithTLS: unknown ClientCerts %d", int(cc))
}

// tlsSetup is what WithTLS configured.
type tlsSetup struct {
	certs      *Certs
	authClient string      // tls-auth-clients
	client     *tls.Config // for the server's own probes and Do
}

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
	var (
		setup *tlsSetup
		err   error
	)
	if certs == nil {
		err = errors.New("redistest: WithTLS needs Certs")
	} else {
		var auth string
		if auth, err = clientCerts.directive(); err == nil {
			var client *tls.Config
			if client, err = certs.ClientConfig(); err == nil {
				setup = &tlsSetup{certs: certs, authClient: auth, client: client}
			}
		}
	}
	return func(c *config) {
		if err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
		c.tls = setup
	}
}

// portArgs returns the redis-server arguments that make it listen on port:
// plain TCP, or TLS only.
func (c *config) portArgs(port int) []string {
	p := strconv.Itoa(port)
	if c.tls == nil {
		return []string{"--port", p}
	}
	return []string{
		"--port", "0",
		"--tls-port", p,
		"--tls-cert-file", c.tls.certs.ServerCertFile,
		"--tls-key-file", c.tls.certs.ServerKeyFile,
		"--tls-ca-cert-file", c.tls.certs.CAFile,
		"--tls-auth-clients", c.tls.authClient,
	}
}

// clientTLS returns the TLS configuration of the server's own connections,
// or nil for a plain server.
func (c *config) clientTLS() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.client
}

// dial connects to addr, with TLS when tc is not nil; ctx bounds the
// handshake too.
func dial(ctx context.Context, addr string, tc *tls.Config) (net.Conn, error) {
	if tc == nil {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	d := tls.Dialer{Config: tc}
	return d.DialContext(ctx, "tcp", addr)
}

// Certs returns the certificates of a server started [WithTLS], or nil.
func (s *Server) Certs() *Certs {
	if s.cfg.tls == nil {
		return nil
	}
	return s.cfg.tls.certs
}
