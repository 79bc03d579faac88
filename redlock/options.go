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
	// MinNodeTimeout is the shortest node timeout accepted. Below it no
	// Redis reply comes in time even over an idle loopback (1ns, 1µs and
	// 10µs were tried): a call that times out leaves its outcome unknown,
	// so an acquisition's SETs land unconfirmed and the releases meant to
	// remove them time out too; the keys stay until their TTL and refuse
	// the caller's next attempts as if another held the lock, and the
	// release of a lock granted at last is not confirmed. A node timeout
	// near the nodes' round trip under load does the same, less often:
	// keep it well above. No default is shorter (TTL/10 of the shortest
	// TTL is over 200µs).
	MinNodeTimeout = 100 * time.Microsecond
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

// An Option configures a Client, or one call. Options are checked by New and
// Open, which return an error that names a bad value.
//
// TryLock, Lock and Do take options too, which apply to that call only, over
// the Client's: WithTTL (all three), WithBackoff and WithMaxAttempts (Lock and
// Do) and WithExtendInterval (Do). A call checks them as Open does (against
// the Client's node timeout, which a call's TTL does not change), and
// returns an error that names an option that applies to the Client only
// (WithTLSConfig, WithKeyPrefix, WithFencing, WithNodeTimeout,
// WithDriftFactor, WithObserver, WithLogger) or that means nothing for the method (WithBackoff on
// TryLock, say).
type Option func(*config)

// optionSet records which options a config was given, one bit per option.
type optionSet uint16

// The options, as bits of an optionSet. Every Option sets its bit; a call
// accepts only the options of its method (see callOptions).
const (
	optTTL optionSet = 1 << iota
	optNodeTimeout
	optDrift
	optBackoff
	optFencing
	optKeyPrefix
	optTLS
	optExtend
	optMaxAttempts
	optObserver // WithObserver and WithLogger
)

var optionNames = map[optionSet]string{
	optTTL:         "WithTTL",
	optNodeTimeout: "WithNodeTimeout",
	optDrift:       "WithDriftFactor",
	optBackoff:     "WithBackoff",
	optFencing:     "WithFencing",
	optKeyPrefix:   "WithKeyPrefix",
	optTLS:         "WithTLSConfig",
	optExtend:      "WithExtendInterval",
	optMaxAttempts: "WithMaxAttempts",
	optObserver:    "WithObserver (or WithLogger)",
}

type config struct {
	set            optionSet
	ttl            time.Duration
	nodeTimeout    time.Duration
	nodeTimeoutSet bool
	driftFactor    float64
	backoff        Backoff
	fencing        bool
	extendEvery    time.Duration
	maxAttempts    int // 0: no cap
	keyPrefix      string
	tls            *tls.Config
	observers      []Observer // WithObserver, WithLogger
	errs           []error    // from options that found a bad value at once
}

// WithTTL sets how long a lock lives on the nodes unless extended (default
// 10s, DefaultTTL). It must be positive, at most MaxTTL, larger than the
// drift it implies (ttl*driftFactor + 2ms), and larger than the node
// timeout (WithNodeTimeout; on a call, the Client's).
func WithTTL(ttl time.Duration) Option {
	return func(c *config) { c.ttl, c.set = ttl, c.set|optTTL }
}

// WithNodeTimeout bounds each call to one node. It must be at least
// MinNodeTimeout (100µs) and smaller than the TTL; keep it much smaller,
// since a slow node eats into the lock's validity, and well above the
// nodes' round trip, since a call that times out leaves its outcome
// unknown. The default is TTL/10, at most 200ms.
//
// A node that queues commands under load and pipelines them
// (driver.Queuer, as the nodes of every Redis driver here do) is given it
// as the bound of a command's time on the network, from the moment the
// command leaves the queue; the wait in the queue is bounded by the call's
// context and by the lock's validity (for a SET or an extension) or a node
// timeout past the latest the key may live on the nodes (for a release: see
// Lock.Unlock), so that a client under load queues rather than timing out. The lock's validity is measured from the start of the call
// either way.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) { c.nodeTimeout, c.nodeTimeoutSet, c.set = d, true, c.set|optNodeTimeout }
}

// WithDriftFactor sets the share of the TTL subtracted from a lock's validity
// for clock drift between the client and the nodes (default 0.01); 2ms are
// always added for Redis' own expiry precision. It must be in [0, 1).
func WithDriftFactor(f float64) Option {
	return func(c *config) { c.driftFactor, c.set = f, c.set|optDrift }
}

// WithBackoff sets how long Lock waits between attempts (default
// DefaultBackoff); a wait shorter than 1ms (zero or negative included) is
// taken as 1ms. Lock keeps trying until it holds the lock, its context ends,
// or WithMaxAttempts's cap is reached: without a deadline on the context or a
// cap, Lock waits as long as the key is held.
func WithBackoff(b Backoff) Option {
	return func(c *config) { c.backoff, c.set = b, c.set|optBackoff }
}

// WithFencing gives every lock a fencing token (Lock.Token) that rises with
// every grant of its key. Each node keeps a counter per hash slot, shared by
// the keys of the slot, which never expires, at driver.FenceKey(key), or
// with a key prefix under the prefix, shared by the slot's keys of that
// prefix (driver.PrefixFenceKey says where). Acquiring
// reads the counters with the SET in one step, takes the largest among the
// granting nodes plus one, and writes it back to a quorum before the lock is
// returned, at the cost of a second round trip.
//
// Tokens only rise while the nodes keep their counters: a node that crashes
// without appendfsync always can lose a counter and a token can repeat. They
// protect a resource only if every client of the key uses WithFencing (a
// grant without it has token 0 and raises no counter) and the resource
// refuses a write without a token, and checks a token and writes in one
// atomic step. Do's function reads its lock's token with TokenFrom. A
// counter at 2^64-1 has no token above it: the acquisitions of its keys
// then fail, at once for Lock and Do, with an error that says so (not
// ErrNotObtained: retrying cannot fix it). Every
// node must implement driver.Fencer (all drivers of this module do); New and
// Open fail otherwise.
func WithFencing() Option {
	return func(c *config) { c.fencing, c.set = true, c.set|optFencing }
}

// WithKeyPrefix puts prefix before every lock key on the nodes (default none),
// and before the fencing counters of WithFencing (prefix +
// "redlock:fence:{T}", one per hash slot: driver.PrefixFenceKey), so that
// lock keys, counters and release channels stay in a namespace of their own
// and an ACL rule can be narrow (~lock:* and &redlock:released:{*}lock:* for
// the prefix "lock:"; the README gives the whole rule). Lock.Key still
// returns the key without the prefix. Clients of versions before this one
// kept the counters of every prefix at driver.FenceKey(key), which the
// fencing scripts still read where the user may (see
// driver.OldFenceKeys). A key's tokens rise across the Clients of one
// prefix: a Client of another prefix that names the same key on the nodes
// (no prefix and "lock:x" beside the prefix "lock:" and "x") is refused
// while the lock is held, but draws its tokens from its own prefix's
// counter, which can be lower.
func WithKeyPrefix(prefix string) Option {
	return func(c *config) { c.keyPrefix, c.set = prefix, c.set|optKeyPrefix }
}

// WithTLSConfig makes Open connect to every node with TLS using cfg, for
// addresses in any form; a rediss:// address's tls_* query parameters
// (tls_ca_file, tls_cert_file, tls_key_file, tls_server_name) are applied on
// top of a copy of it. The driver must implement driver.ConfigOpener, as every
// Redis driver here does. New, which takes nodes already configured, rejects
// it.
//
// A nil cfg is an error, not a connection without TLS: a configuration that
// failed to load must not quietly turn into plain text.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) {
		c.set |= optTLS
		if cfg == nil {
			c.errs = append(c.errs, errors.New("redlock: WithTLSConfig(nil): give a *tls.Config, or leave the option out for connections without TLS"))
			return
		}
		c.tls = cfg
	}
}

// WithMaxAttempts caps the attempts of Lock and Do at n (at least 1; the
// first attempt counts): after n attempts that did not obtain the lock, they
// return the last attempt's error, which matches ErrNotObtained. The cap
// bounds the wait behind another waiter of the same Client for the key too:
// Lock and Do make their attempts on the Backoff while they wait for their
// turn. Without a cap (the default) and without a deadline on the context,
// Lock waits as long as the key is held. With few attempts (WithMaxAttempts(1)
// above all) on a fresh Client, call Client.Connect first, as for TryLock.
func WithMaxAttempts(n int) Option {
	return func(c *config) { c.maxAttempts, c.set = n, c.set|optMaxAttempts }
}

// WithExtendInterval sets how often Do extends the lock it holds: the next
// extension starts at most d after the previous one ended (sooner after a
// failed one). It must leave room for an extension inside the validity: d +
// the node timeout < TTL - drift (ttl*driftFactor + 2ms), and it must be at
// least 1ms, so that Do never extends without a pause; New and Open reject
// any other d (as Do rejects it given to the call). The default is TTL/3,
// or less when the node timeout needs it: (TTL - drift - node timeout)/2,
// but at least 1ms. (A node timeout of TTL - drift or more leaves no room for
// any interval; New accepts it without WithExtendInterval, for TryLock and
// Lock, and Do then extends every TTL/3, or every (TTL - drift)/2 when that
// is shorter, so that an extension starts before the validity ends, and
// keeps the lock only while the nodes answer well within the node timeout.)
func WithExtendInterval(d time.Duration) Option {
	return func(c *config) { c.extendEvery, c.set = d, c.set|optExtend }
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
	var extendErr error // of an interval given: see checkExtendInterval
	if c.set&optExtend == 0 {
		c.extendEvery = defaultExtendInterval(c.ttl, drift(c.ttl, c.driftFactor), c.nodeTimeout)
	} else {
		extendErr = checkExtendInterval(c.extendEvery, c.ttl, drift(c.ttl, c.driftFactor), c.nodeTimeout)
	}
	switch {
	case len(c.errs) > 0:
		return c, errors.Join(c.errs...)
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
	case c.nodeTimeout < MinNodeTimeout:
		return c, fmt.Errorf("redlock: node timeout %v is shorter than %v (MinNodeTimeout): no node answers that fast, and a call that times out leaves its outcome unknown", c.nodeTimeout, MinNodeTimeout)
	case c.nodeTimeout >= c.ttl:
		return c, fmt.Errorf("redlock: node timeout %v is not smaller than the TTL %v", c.nodeTimeout, c.ttl)
	case extendErr != nil:
		return c, fmt.Errorf("redlock: %w", extendErr)
	case c.backoff == nil:
		return c, errors.New("redlock: nil Backoff")
	case c.set&optMaxAttempts != 0 && c.maxAttempts < 1:
		return c, fmt.Errorf("redlock: max attempts %d is less than 1", c.maxAttempts)
	case len(c.keyPrefix) >= MaxKeyLen:
		return c, fmt.Errorf("redlock: key prefix of %d bytes leaves no room for a key (at most %d bytes together)", len(c.keyPrefix), MaxKeyLen)
	}
	return c, nil
}

// extendRoom is the validity left for Do's extensions, which must fit in it
// with the node timeout that an extension's round may take.
func extendRoom(ttl, drift, nodeTimeout time.Duration) time.Duration {
	return ttl - drift - nodeTimeout
}

// minExtendInterval is the shortest extension interval of Do, given or by
// default: half the room left by a node timeout just below the TTL less the
// drift would otherwise be a few nanoseconds, or 0, and an interval given
// below it (1ns) had Do extend back to back, without pause.
const minExtendInterval = time.Millisecond

// defaultExtendInterval is Do's extension interval when none is given: TTL/3,
// or less when the node timeout needs it: half the room (extendRoom) when
// there is any, else half the validity (the TTL less the drift), so that an
// extension starts before the validity ends (TTL/3 would not, with a drift
// factor of 2/3 or more); at least minExtendInterval.
func defaultExtendInterval(ttl, drift, nodeTimeout time.Duration) time.Duration {
	d := ttl / 3
	if room := extendRoom(ttl, drift, nodeTimeout); room > 0 {
		d = min(d, room/2)
	} else {
		d = min(d, (ttl-drift)/2)
	}
	return max(d, minExtendInterval)
}

// drift is the part of a TTL that a lock's validity sets aside for clock drift
// and Redis' expiry precision.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}
