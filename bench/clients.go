package bench

import (
	"context"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// The bare clients, configured alike for the floors and for the peers in
// bench/peers, so that a floor and a peer differ only by the lock logic above
// the client. The settings are each client's defaults except where a default
// would starve 64 concurrent lockers (pool sizes) or let a call to a stalled
// server wait without bound (timeouts, taken from go-redis' defaults). The
// redlock drivers configure their own clients: whatever their settings cost is
// part of what the library costs, and shows in the ratio to the floor.
const (
	// PoolSize is the go-redis pool size and the redigo idle pool size: a
	// connection per locker at 64 lockers.
	PoolSize = 64
	// dialTimeout and ioTimeout are go-redis' defaults, given to redigo too.
	dialTimeout = 5 * time.Second
	ioTimeout   = 3 * time.Second
)

// NewGoRedis returns the go-redis client for addr: the defaults, with
// PoolSize connections and ContextTimeoutEnabled, so that a context's deadline
// bounds each command.
func NewGoRedis(addr string) *goredis.Client {
	return goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		PoolSize:              PoolSize,
		ContextTimeoutEnabled: true,
	})
}

// NewRedigoPool returns the redigo pool for addr: up to PoolSize idle
// connections, and go-redis' default dial, read and write timeouts.
func NewRedigoPool(addr string) *redigo.Pool {
	return &redigo.Pool{
		MaxIdle:     PoolSize,
		IdleTimeout: 4 * time.Minute,
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr,
				redigo.DialConnectTimeout(dialTimeout),
				redigo.DialReadTimeout(ioTimeout),
				redigo.DialWriteTimeout(ioTimeout))
		},
	}
}

// NewRueidis returns the rueidis client for addr: the defaults, on one
// standalone server, without client-side caching.
func NewRueidis(addr string) (rueidis.Client, error) {
	return rueidis.NewClient(RueidisOption(addr))
}

// RueidisOption is the rueidis.ClientOption of NewRueidis.
func RueidisOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
	}
}

// NewValkey returns the valkey-go client for addr, configured as NewRueidis
// (valkey-go is a fork of rueidis).
func NewValkey(addr string) (valkey.Client, error) {
	o := RueidisOption(addr)
	return valkey.NewClient(valkey.ClientOption{
		InitAddress: o.InitAddress, ForceSingleClient: o.ForceSingleClient, DisableCache: o.DisableCache,
	})
}
