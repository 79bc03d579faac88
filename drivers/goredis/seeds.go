package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-redlock/redlock/internal/clusterseeds"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// askSlots returns the clusterseeds.Ask of the cluster node a: CLUSTER
// SLOTS on a client of one seed of its own, with a's credentials, dialed
// with dial (TLS with tlsConfig, as the cluster client's connections), made
// and closed for the one question.
func askSlots(a redisaddr.Node, tlsConfig *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) clusterseeds.Ask {
	return func(ctx context.Context, seed string) (any, error) {
		c := redis.NewClient(&redis.Options{
			Addr:                     seed,
			Username:                 a.Username,
			Password:                 a.Password,
			TLSConfig:                tlsConfig, // informative: dial does the TLS
			Dialer:                   dial,
			ContextTimeoutEnabled:    true,
			MaxRetries:               -1,
			DialerRetries:            1,
			DialTimeout:              dialTimeout,
			ReadTimeout:              ioTimeout,
			WriteTimeout:             ioTimeout,
			PoolSize:                 1,
			DisableIdentity:          true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		defer c.Close()
		reply, err := c.Do(ctx, "CLUSTER", "SLOTS").Result()
		var re redis.Error
		if errors.As(err, &re) {
			return nil, nil // an error reply: no map from this seed
		}
		return reply, err
	}
}
