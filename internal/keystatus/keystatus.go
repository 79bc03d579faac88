// Package keystatus reads what one Redis node holds for a lock key: whether
// the key exists, its remaining time to live, and its fencing counters. It is
// what "redlock status" sends to every node, and what the ACL tests check the
// README's least-privilege rule against. It never reads a lock's value.
// NewClient is the connection to one node of "redlock status" and "redlock
// doctor", TLS included.
package keystatus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/goredispipe"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/respguard"
	"github.com/go-redlock/redlock/internal/tlsdial"
)

// Key is what one node holds for a lock key.
type Key struct {
	// Held reports whether the key exists on the node: some client holds the
	// lock there (its value is never read).
	Held bool
	// TTL is the key's remaining time to live when Held; NoExpiry when the
	// key has none (it was not set by a Redlock client).
	TTL time.Duration
	// Fence is the key's fencing counter (driver.PrefixFenceKey: the
	// counter of its hash slot, and of its key prefix when it has one, which
	// those keys share), 0 when it has none; FenceSet tells 0 from none.
	Fence    uint64
	FenceSet bool
	// FenceErr is why the counter in use could not be read, when the
	// node answered for the key but not for it: the user may not read it
	// (NOPERM), or it holds no number (WRONGTYPE, or a string that is not
	// a decimal uint64, on which the acquiring script fails too). Fence,
	// FenceSet and Counter then say nothing of it.
	FenceErr error
	// Shared is, for a key with a prefix, the counter of its slot that
	// versions before kept for every prefix (driver.FenceKey), and Legacy
	// the per-key counter of still earlier versions (driver.LegacyFenceKey):
	// the old counters (driver.OldFenceKeys), which the acquiring script
	// reads beside Fence and takes when larger (it never writes them).
	// SharedSet and LegacySet tell 0 from none. They are read as the script
	// reads them: one the user may not read, one another node of a cluster
	// serves, and one that does not hold a number count as none.
	Shared    uint64
	SharedSet bool
	Legacy    uint64
	LegacySet bool
}

// Counter returns the counter from which the next fenced grant draws its
// token on this node, the largest of Fence, Shared and Legacy (the token is
// one more than the largest Counter among the granting nodes), and whether
// any exists; ok is false when FenceErr says the counter in use is unknown.
func (k Key) Counter() (n uint64, ok bool) {
	if k.FenceErr != nil {
		return 0, false
	}
	for _, c := range [...]struct {
		n   uint64
		set bool
	}{{k.Fence, k.FenceSet}, {k.Shared, k.SharedSet}, {k.Legacy, k.LegacySet}} {
		if c.set {
			n, ok = max(n, c.n), true
		}
	}
	return n, ok
}

// NoExpiry is the TTL of a key that exists without a time to live.
const NoExpiry = time.Duration(-1)

// Read asks c what it holds for key, as it is named on the node (with its
// key prefix, prefix), in one round trip: PTTL key, and GET of its fencing
// counter and of the old counters that the acquiring script reads
// (driver.OldFenceKeys). A counter in use that the node refuses to read or
// that holds no number is Key.FenceErr, not an error: the key's state is
// known.
func Read(ctx context.Context, c *redis.Client, prefix, key string) (Key, error) {
	fk := driver.PrefixFenceKey(prefix, key)
	names := append([]string{fk}, driver.OldFenceKeys(key, fk)...)
	var (
		pttl   *redis.DurationCmd
		fences = make([]*redis.StringCmd, len(names))
	)
	_, perr := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		pttl = p.PTTL(ctx, key)
		for i, name := range names {
			fences[i] = p.Get(ctx, name)
		}
		return nil
	})
	cmds := []redis.Cmder{pttl}
	for _, f := range fences {
		cmds = append(cmds, f)
	}
	goredispipe.StampUnsent(cmds, perr) // a refused handshake
	var k Key
	switch d, err := pttl.Result(); {
	case err != nil:
		return Key{}, fmt.Errorf("PTTL: %w", err)
	case d == -2: // go-redis keeps the special replies as nanoseconds
		// no key
	case d == -1:
		k.Held, k.TTL = true, NoExpiry
	default:
		k.Held, k.TTL = true, d
	}
	var err error
	if k.Fence, k.FenceSet, err = counter(fences[0], "fencing counter", fk); err != nil {
		if !unreadable(err) {
			return Key{}, err
		}
		k.FenceErr = err
	}
	for i, name := range names[1:] {
		n, set, err := counter(fences[1+i], "old fencing counter", name)
		switch {
		case err != nil:
			// As the script: an old counter it may not read, or that is
			// not a number, is none.
		case name == driver.LegacyFenceKey(key):
			k.Legacy, k.LegacySet = n, set
		default:
			k.Shared, k.SharedSet = n, set
		}
	}
	return k, nil
}

// errNotANumber is the error of a counter that holds a string that is not a
// decimal uint64.
var errNotANumber = errors.New("not a number")

// unreadable reports whether err, a counter's error from counter, is the
// counter's own: a refusal to read it (NOPERM), a key of another type
// (WRONGTYPE), or a string that is not a number. A connection's error, a
// timeout or a cluster's redirection is the node's, not the counter's.
func unreadable(err error) bool {
	if code := driver.PermanentCode(err); code == "NOPERM" || code == "WRONGTYPE" {
		return true
	}
	return errors.Is(err, errNotANumber)
}

// counter parses the reply of GET on the counter name, a what.
func counter(get *redis.StringCmd, what, name string) (uint64, bool, error) {
	s, err := get.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("GET of the %s: %w", what, err)
	}
	n, perr := strconv.ParseUint(s, 10, 64)
	if perr != nil {
		// What it holds is not shown: a lock whose key is the counter's
		// name (which the README warns of) holds its secret value there.
		return 0, false, fmt.Errorf("the %s %s is %w (%d bytes, not shown: a lock of that name would hold its value there)", what, name, errNotANumber, len(s))
	}
	return n, true, nil
}

// NewClient returns a go-redis client for the node at a, speaking RESP2
// without client identification (it sends only AUTH and SELECT besides its
// commands), each dial and command bounded by timeout, one connection, no
// retries.
func NewClient(a redisaddr.Addr, timeout time.Duration) (*redis.Client, error) {
	tlsCfg, err := a.TLSConfig(nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a, err)
	}
	dial := redis.NewDialer(&redis.Options{DialTimeout: timeout})
	if tlsCfg != nil {
		// As the drivers dial (see package tlsdial): the handshake bounded
		// by the context, and a server that refuses the connection for
		// want of a client certificate, often seen only as a reset
		// connection, named as such.
		d := &net.Dialer{Timeout: timeout}
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return tlsdial.Dial(ctx, d, network, addr, tlsCfg)
		}
	}
	// Replies that announce more than the process can hold break the
	// connection (see package respguard).
	return redis.NewClient(&redis.Options{
		Dialer:                respguard.Dialer(dial),
		Addr:                  a.HostPort(),
		Username:              a.Username,
		Password:              a.Password,
		DB:                    a.DB,
		TLSConfig:             tlsCfg,
		Protocol:              2,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolSize:              1,
	}), nil
}
