// Package keystatus reads what one Redis node holds for a lock key: whether
// the key exists, its remaining time to live, and its fencing counter. It is
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
)

// Key is what one node holds for a lock key.
type Key struct {
	// Held reports whether the key exists on the node: some client holds the
	// lock there (its value is never read).
	Held bool
	// TTL is the key's remaining time to live when Held; NoExpiry when the
	// key has none (it was not set by a Redlock client).
	TTL time.Duration
	// Fence is the key's fencing counter (driver.FenceKey: the counter of
	// its hash slot, which the keys of the slot share), 0 when it has none;
	// FenceSet tells 0 from none.
	Fence    uint64
	FenceSet bool
}

// NoExpiry is the TTL of a key that exists without a time to live.
const NoExpiry = time.Duration(-1)

// Read asks c what it holds for key, as it is named on the node (with any key
// prefix), in one round trip: PTTL key and GET of its fencing counter.
func Read(ctx context.Context, c *redis.Client, key string) (Key, error) {
	var (
		pttl  *redis.DurationCmd
		fence *redis.StringCmd
	)
	_, perr := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		pttl = p.PTTL(ctx, key)
		fence = p.Get(ctx, driver.FenceKey(key))
		return nil
	})
	goredispipe.StampUnsent([]redis.Cmder{pttl, fence}, perr) // a refused handshake
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
	switch s, err := fence.Result(); {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return Key{}, fmt.Errorf("GET of the fencing counter: %w", err)
	default:
		n, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil {
			if len(s) > 40 {
				s = s[:40] + "..."
			}
			return Key{}, fmt.Errorf("the fencing counter %s is not a number: %q", driver.FenceKey(key), s)
		}
		k.Fence, k.FenceSet = n, true
	}
	return k, nil
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
	// Replies that announce more than the process can hold break the
	// connection (see package respguard).
	dial := redis.NewDialer(&redis.Options{DialTimeout: timeout, TLSConfig: tlsCfg})
	guarded := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return respguard.Wrap(conn), nil
	}
	return redis.NewClient(&redis.Options{
		Dialer:                guarded,
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
