package redlock

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults for the options.
const (
	// DefaultTTL is the lock's time to live when WithTTL is not given.
	DefaultTTL = 10 * time.Second
	// DefaultDriftFactor is the share of the TTL set aside for clock drift.
	DefaultDriftFactor = 0.01
	// MaxNodeTimeout caps the default node timeout, which is TTL/10.
	MaxNodeTimeout = 200 * time.Millisecond
	// MaxKeyLen is the longest key accepted, in bytes, key prefix included.
	MaxKeyLen = 4096
	// MaxTTL is the longest TTL accepted, by WithTTL and Extend. A longer one
	// would block the key for that long after a holder crashed, and makes the
	// drift allowance, which grows with the TTL, meaningless.
	MaxTTL = 24 * time.Hour
	// MaxNodes is the most nodes a Client accepts.
	MaxNodes = 64
)

// DefaultBackoff is the retry policy of Lock when WithBackoff is not given:
// jittered exponential from 10ms up to 250ms.
var DefaultBackoff = ExponentialBackoff(10*time.Millisecond, 250*time.Millisecond)

// An Option configures a Client. Options are checked by New and Open, which
// return an error that names a bad value.
type Option func(*config)

type config struct {
	ttl            time.Duration
	nodeTimeout    time.Duration
	nodeTimeoutSet bool
	driftFactor    float64
	backoff        Backoff
	fencing        bool
	extendEvery    time.Duration
	keyPrefix      string
	tls            *tls.Config
}

// WithTTL sets how long a lock lives on the nodes unless extended (default
// 10s). It must be positive and larger than the drift it implies
// (ttl*driftFactor + 2ms).
func WithTTL(ttl time.Duration) Option {
	return func(c *config) { c.ttl = ttl }
}

// WithNodeTimeout bounds each call to one node. It must be positive and
// smaller than the TTL; keep it much smaller, since a slow node eats into the
// lock's validity. The default is TTL/10, at most 200ms.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) { c.nodeTimeout, c.nodeTimeoutSet = d, true }
}

// WithDriftFactor sets the share of the TTL subtracted from a lock's validity
// for clock drift between the client and the nodes (default 0.01); 2ms are
// always added for Redis' own expiry precision. It must be in [0, 1).
func WithDriftFactor(f float64) Option {
	return func(c *config) { c.driftFactor = f }
}

// WithBackoff sets how long Lock waits between attempts (default
// DefaultBackoff). Lock keeps trying until it holds the lock or its context
// ends.
func WithBackoff(b Backoff) Option {
	return func(c *config) { c.backoff = b }
}

// WithFencing gives every lock a fencing token (Lock.Token) that rises with
// every grant of its key. Each node keeps a counter per hash slot, shared by
// the keys of the slot, which never expires, at driver.FenceKey(key), which
// says where it is. Acquiring
// reads the counters with the SET in one step, takes the largest among the
// granting nodes plus one, and writes it back to a quorum before the lock is
// returned, at the cost of a second round trip.
//
// Tokens only rise while the nodes keep their counters: a node that crashes
// without appendfsync always can lose a counter and a token can repeat. Every
// node must implement driver.Fencer (all drivers of this module do); New and
// Open fail otherwise.
func WithFencing() Option {
	return func(c *config) { c.fencing = true }
}

// WithKeyPrefix puts prefix before every lock key on the nodes (default none),
// so that lock keys and their release channels stay in a namespace of their
// own and an ACL rule can be narrow (~lock:* and &redlock:released:{*}lock:*
// for the prefix "lock:"; the fencing counters, one per hash slot, are
// shared by all prefixes; the README gives the whole rule). Lock.Key still
// returns the key without the prefix.
func WithKeyPrefix(prefix string) Option {
	return func(c *config) { c.keyPrefix = prefix }
}

// WithTLSConfig makes Open connect to every node with TLS using cfg, for
// addresses in any form; a rediss:// address's tls_* query parameters
// (tls_ca_file, tls_cert_file, tls_key_file, tls_server_name) are applied on
// top of a copy of it. The driver must implement driver.ConfigOpener, as every
// Redis driver here does. New, which takes nodes already configured, rejects
// it.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithExtendInterval sets how often Do extends the lock it holds (default
// TTL/3). It must be positive and shorter than the TTL.
func WithExtendInterval(d time.Duration) Option {
	return func(c *config) { c.extendEvery = d }
}

func newConfig(opts []Option) (config, error) {
	c := config{ttl: DefaultTTL, driftFactor: DefaultDriftFactor, backoff: DefaultBackoff}
	for _, o := range opts {
		if o == nil {
			return c, errors.New("redlock: nil Option")
		}
		o(&c)
	}
	if !c.nodeTimeoutSet {
		c.nodeTimeout = min(c.ttl/10, MaxNodeTimeout)
	}
	if c.extendEvery == 0 {
		c.extendEvery = c.ttl / 3
	}
	switch {
	case math.IsNaN(c.driftFactor) || c.driftFactor < 0 || c.driftFactor >= 1:
		return c, fmt.Errorf("redlock: drift factor %v is not in [0, 1)", c.driftFactor)
	case c.ttl <= 0:
		return c, fmt.Errorf("redlock: TTL %v is not positive", c.ttl)
	case c.ttl > MaxTTL:
		return c, fmt.Errorf("redlock: TTL %v is longer than %v", c.ttl, MaxTTL)
	case c.ttl <= drift(c.ttl, c.driftFactor):
		return c, fmt.Errorf("redlock: TTL %v is too small: the drift allowance alone is %v", c.ttl, drift(c.ttl, c.driftFactor))
	case c.nodeTimeout <= 0:
		return c, fmt.Errorf("redlock: node timeout %v is not positive", c.nodeTimeout)
	case c.nodeTimeout >= c.ttl:
		return c, fmt.Errorf("redlock: node timeout %v is not smaller than the TTL %v", c.nodeTimeout, c.ttl)
	case c.extendEvery <= 0 || c.extendEvery >= c.ttl:
		return c, fmt.Errorf("redlock: extend interval %v is not between 0 and the TTL %v", c.extendEvery, c.ttl)
	case c.backoff == nil:
		return c, errors.New("redlock: nil Backoff")
	case len(c.keyPrefix) >= MaxKeyLen:
		return c, fmt.Errorf("redlock: key prefix of %d bytes leaves no room for a key (at most %d bytes together)", len(c.keyPrefix), MaxKeyLen)
	}
	return c, nil
}

// drift is the part of a TTL that a lock's validity sets aside for clock drift
// and Redis' expiry precision.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}
