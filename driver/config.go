package driver

import "crypto/tls"

// Config holds what redlock.Open gives a driver beyond the address.
type Config struct {
	// TLS, when not nil, makes the node connect with TLS using this
	// configuration, whatever the address's scheme. A rediss:// address's
	// tls_* query parameters are applied on top of a copy of it.
	TLS *tls.Config
}

// ConfigOpener is implemented by drivers that accept a Config. redlock.Open
// calls OpenConfig instead of Open when an option sets part of the Config
// (redlock.WithTLSConfig), and fails for a driver without it.
type ConfigOpener interface {
	// OpenConfig is Driver.Open with cfg applied: a node for addr that
	// connects as cfg says (with TLS when cfg.TLS is not nil).
	OpenConfig(addr string, cfg Config) (Node, error)
}
