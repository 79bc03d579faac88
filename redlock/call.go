package redlock

import (
	"fmt"
	"time"
)

// callConfig is what one call of TryLock, Lock or Do runs with: the Client's
// settings, or a call's options over them.
type callConfig struct {
	ttl         time.Duration
	drift       time.Duration // drift(ttl, driftFactor)
	backoff     Backoff
	extendEvery time.Duration // Do's extension interval
	maxAttempts int           // Lock's cap on attempts; 0: none
	// left counts the releases that a Lock's (or Do's) failed attempts
	// left to the background (see leftovers); nil for TryLock, and until
	// an attempt of a Lock fails (see waits).
	left *leftovers
	// waits says that the call is a Lock's or a Do's, which may try again:
	// its first failed attempt makes left (see tryLock), so that the next
	// attempts know where their own earlier keys may still be set.
	waits bool
	// bad is the error of the call's options (see callOptions), for a
	// Client with observers: the call's attempt fails with it, as bad
	// input, without sending anything, so that the observers see it as
	// they see an attempt on an empty key (OutcomeError).
	bad error
}

// The options each method accepts.
const (
	tryLockOptions = optTTL
	lockOptions    = optTTL | optBackoff | optMaxAttempts
	doOptions      = lockOptions | optExtend
)

// clientOnly are the options that only New and Open take.
const clientOnly = optNodeTimeout | optDrift | optFencing | optKeyPrefix | optTLS | optObserver

// callDefaults returns the settings of a call without options.
func (c *Client) callDefaults() callConfig {
	return callConfig{ttl: c.ttl, drift: c.drift, backoff: c.backoff, extendEvery: c.extendEvery, maxAttempts: c.maxAttempts}
}

// callOptions returns the settings of one call of method, which accepts the
// options in allowed: the Client's, with opts applied over them and checked
// as Open checks them. Without options it costs nothing but a copy.
func (c *Client) callOptions(method string, allowed optionSet, opts []Option) (callConfig, error) {
	cc := c.callDefaults()
	if len(opts) == 0 {
		return cc, nil
	}
	var cfg config
	for _, o := range opts {
		if o == nil {
			return cc, fmt.Errorf("redlock: %s: nil Option", method)
		}
		var one config // to learn which option o is
		o(&one)
		if err := checkCallOption(method, allowed, one.set); err != nil {
			return cc, err
		}
		o(&cfg)
	}
	if cfg.set&optTTL != 0 {
		ttl := cfg.ttl
		switch {
		case ttl <= 0:
			return cc, fmt.Errorf("redlock: %s: TTL %v is not positive", method, ttl)
		case ttl > MaxTTL:
			return cc, fmt.Errorf("redlock: %s: TTL %v is longer than %v", method, ttl, MaxTTL)
		case ttl <= drift(ttl, c.driftFactor):
			return cc, fmt.Errorf("redlock: %s: TTL %v is too small: the drift allowance alone is %v", method, ttl, drift(ttl, c.driftFactor))
		case c.nodeTimeout >= ttl:
			return cc, fmt.Errorf("redlock: %s: TTL %v is not larger than the Client's node timeout %v", method, ttl, c.nodeTimeout)
		}
		cc.ttl, cc.drift = ttl, drift(ttl, c.driftFactor)
		if !c.extendSet { // the default follows the TTL
			cc.extendEvery = defaultExtendInterval(ttl, cc.drift, c.nodeTimeout)
		}
	}
	if cfg.set&optBackoff != 0 {
		if cfg.backoff == nil {
			return cc, fmt.Errorf("redlock: %s: nil Backoff", method)
		}
		cc.backoff = cfg.backoff
	}
	if cfg.set&optMaxAttempts != 0 {
		if cfg.maxAttempts < 1 {
			return cc, fmt.Errorf("redlock: %s: max attempts %d is less than 1", method, cfg.maxAttempts)
		}
		cc.maxAttempts = cfg.maxAttempts
	}
	if cfg.set&optExtend != 0 {
		cc.extendEvery = cfg.extendEvery
	}
	// As Open does, an interval given (to the call or the Client) must
	// leave room for an extension; the default adapts to the TTL.
	if given := c.extendSet || cfg.set&optExtend != 0; given && allowed&optExtend != 0 && cfg.set&(optTTL|optExtend) != 0 {
		if err := checkExtendInterval(cc.extendEvery, cc.ttl, cc.drift, c.nodeTimeout); err != nil {
			return cc, fmt.Errorf("redlock: %s: %w", method, err)
		}
	}
	return cc, nil
}

// checkCallOption returns an error that names the option set, which a call
// of method was given, unless method accepts it.
func checkCallOption(method string, allowed, set optionSet) error {
	name := optionNames[set]
	switch {
	case set == 0 || name == "":
		return fmt.Errorf("redlock: %s: an option that is not for a call: give it to New or Open", method)
	case set&clientOnly != 0:
		return fmt.Errorf("redlock: %s: %s applies to the Client only: give it to New or Open", method, name)
	case set&allowed == 0:
		return fmt.Errorf("redlock: %s: %s means nothing for %s%s", method, name, method, optionHint[set])
	}
	return nil
}

// optionHint says why an option means nothing for a method that refuses it.
var optionHint = map[optionSet]string{
	optBackoff:     ", which makes one attempt (use Lock)",
	optMaxAttempts: ", which makes one attempt (use Lock)",
	optExtend:      ", which does not extend the lock (only Do does)",
}

// checkExtendInterval checks an extension interval of Do given to New, Open
// (newConfig) or a call: at least minExtendInterval, and short enough for the
// TTL: an extension sent every interval, taking up to the node timeout, must
// land before the lock's validity (the TTL less the drift allowance) ends.
func checkExtendInterval(every, ttl, drift, nodeTimeout time.Duration) error {
	switch {
	case every <= 0:
		return fmt.Errorf("extend interval %v is not positive", every)
	case every < minExtendInterval:
		return fmt.Errorf("extend interval %v is shorter than %v: Do would extend its lock without a pause", every, minExtendInterval)
	case every >= extendRoom(ttl, drift, nodeTimeout):
		return fmt.Errorf("extend interval %v leaves no room for an extension: with the node timeout %v it must stay below the TTL %v minus the drift allowance %v", every, nodeTimeout, ttl, drift)
	}
	return nil
}
