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
	"github.com/go-redlock/redlock/internal/respguard"
)

// askSlots returns the clusterseeds.Ask of the cluster node a: CLUSTER
// SLOTS on a client of one seed of its own, with a's credentials, dialed
// with dial (TLS with tlsConfig, as the cluster client's connections), made
// and closed for the one question (see askWith).
func askSlots(a redisaddr.Node, tlsConfig *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) clusterseeds.Ask {
	return askWith(&redis.Options{
		Username:  a.Username,
		Password:  a.Password,
		TLSConfig: tlsConfig, // informative: dial does the TLS
		Dialer:    dial,
	})
}

// askSlotsOf returns the clusterseeds.Ask of a node over a cluster client
// of the caller's, with options o: a seed is asked as the client connects
// to its nodes, with o's dialer (go-redis' own, with o's TLS, when o has
// none), credentials and protocol, but the node's timeouts, and without
// o's OnConnect hook, which is the caller's business.
func askSlotsOf(o *redis.ClusterOptions) clusterseeds.Ask {
	dial := o.Dialer
	if dial == nil {
		dial = redis.NewDialer(&redis.Options{DialTimeout: dialTimeout, TLSConfig: o.TLSConfig})
	}
	return askWith(&redis.Options{
		Username:                     o.Username,
		Password:                     o.Password,
		CredentialsProvider:          o.CredentialsProvider,
		CredentialsProviderContext:   o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		Protocol:                     o.Protocol,
		TLSConfig:                    o.TLSConfig,
		Dialer:                       respguard.Dialer(dial),
	})
}

// askWith returns a clusterseeds.Ask that asks CLUSTER SLOTS on a client of
// the one seed, with base's credentials, TLS and Dialer (which must be
// set), made and closed for the one question. ctx bounds it all: the
// connection is closed when ctx ends (Close of the node while a seed hangs,
// say), since go-redis bounds a read by the context's deadline but not by
// its cancellation.
func askWith(base *redis.Options) clusterseeds.Ask {
	return func(ctx context.Context, seed string) (any, error) {
		o := *base
		o.Addr = seed
		o.Dialer = func(dctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := base.Dialer(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			return pubsub.CloseOnDone(ctx, conn), nil
		}
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.DialerRetries = 1
		o.DialTimeout = dialTimeout
		o.ReadTimeout = ioTimeout
		o.WriteTimeout = ioTimeout
		o.PoolSize = 1
		o.DisableIdentity = true
		o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		c := redis.NewClient(&o)
		defer c.Close()
		reply, err := c.Do(ctx, "CLUSTER", "SLOTS").Result()
		var re redis.Error
		if errors.As(err, &re) {
			return nil, nil // an error reply: no map from this seed
		}
		return reply, err
	}
}
