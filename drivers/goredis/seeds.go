package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-redlock/redlock/internal/clusterseeds"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// askSlots returns the clusterseeds.Ask of the cluster node a: CLUSTER
// SLOTS on a client of one seed of its own, with a's credentials, dialed
// with dial (TLS with tlsConfig, as the cluster client's connections), made
// and closed for the one question. ctx bounds it all: the connection is
// closed when ctx ends (Close of the node while a seed hangs, say), since
// go-redis bounds a read by the context's deadline but not by its
// cancellation.
func askSlots(a redisaddr.Node, tlsConfig *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) clusterseeds.Ask {
	return func(ctx context.Context, seed string) (any, error) {
		c := redis.NewClient(&redis.Options{
			Addr:      seed,
			Username:  a.Username,
			Password:  a.Password,
			TLSConfig: tlsConfig, // informative: dial does the TLS
			Dialer: func(dctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := dial(dctx, network, addr)
				if err != nil {
					return nil, err
				}
				return pubsub.CloseOnDone(ctx, conn), nil
			},
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
