package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"

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

// seedGate gates the later dials of a *redis.ClusterClient of the caller's
// (New) by its node's seeds' check, as Open's dialer gates its own client:
// a seed that the first check did not vouch for (it did not answer, or
// answered with no slot) is asked before go-redis connects to it, so that a
// map go-redis reads from it later (it falls back to its seeds once no node
// of its map answers) is of the cluster the other seeds vouched for; a seed
// that disagrees refuses the node (every call fails), and its dials keep
// failing while the node is open. It is installed (install) only when the
// first check left such a seed, and becomes inert once every seed agreed or
// the node is closed: the hooks on the client's node clients and the
// function added to the client (ClusterClient.OnNewNode, which cannot be
// undone) then hold this small struct alone, and node clients made
// afterwards get no hook. It is a struct of its own, not the node's, so
// that neither keeps the node alive.
type seedGate struct {
	mu        sync.Mutex
	closed    bool // the node is closed: install installs nothing
	installed bool
	seeds     atomic.Pointer[clusterseeds.Checker] // nil while inert
}

// install adds the gate to each node client that cc makes from now on, if
// the first check (ended, without refusal) left a seed not vouched for; at
// most once. The node calls it before its first call has cc read the slot
// map; node clients made before (by the caller's use of cc) are not gated.
func (g *seedGate) install(cc *redis.ClusterClient, seeds *clusterseeds.Checker) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.installed || seeds.Settled() || seeds.Err() != nil {
		return
	}
	g.installed = true
	g.seeds.Store(seeds)
	cc.OnNewNode(func(rdb *redis.Client) {
		if g.seeds.Load() != nil {
			rdb.AddHook(admitHook{g})
		}
	})
}

// close makes the gate inert for good: the node no longer uses the client.
func (g *seedGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.seeds.Store(nil)
}

// admit returns nil if the client may connect to addr: the gate is inert,
// or addr is no seed or one vouched for, or it was asked now and agrees
// (see clusterseeds.Checker.Admit). It makes the gate inert once every seed
// agreed.
func (g *seedGate) admit(ctx context.Context, addr string) error {
	seeds := g.seeds.Load()
	if seeds == nil || !seeds.Unvouched(addr) {
		return nil
	}
	if err := seeds.Admit(ctx, addr); err != nil {
		return err
	}
	if seeds.Settled() {
		g.seeds.CompareAndSwap(seeds, nil)
	}
	return nil
}

// admitHook is a seedGate on a node client of the caller's cluster client.
type admitHook struct{ g *seedGate }

// DialHook asks the gate before next connects.
func (h admitHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := h.g.admit(ctx, addr); err != nil {
			return nil, err
		}
		return next(ctx, network, addr)
	}
}

// ProcessHook is next.
func (admitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook is next.
func (admitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
