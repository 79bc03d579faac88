package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/go-redlock/redlock/internal/clusterseeds"
	"github.com/go-redlock/redlock/internal/lastwords"
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
		Dialer:                       respguard.Dialer(dial, lastwords.Wrap),
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
// first check left such a seed, into the client's clientGates, and leaves
// them once every seed agreed or the node is closed. It is a struct of its
// own, not the node's, so that neither keeps the node alive.
type seedGate struct {
	mu        sync.Mutex
	closed    bool // the node is closed: install installs nothing
	installed bool
	of        *clientGates                         // the client's, once installed
	seeds     atomic.Pointer[clusterseeds.Checker] // nil while inert
}

// install adds the gate to the gates of cc (see clientGates), if the first
// check (ended, without refusal) left a seed not vouched for; at most once.
// The node calls it before its first call has cc read the slot map; node
// clients that cc made before the first gate of cc was installed (by the
// caller's use of cc) are not gated.
func (g *seedGate) install(cc *redis.ClusterClient, seeds *clusterseeds.Checker) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.installed || seeds.Settled() || seeds.Err() != nil {
		return
	}
	g.installed = true
	g.of = gatesOf(cc)
	g.seeds.Store(seeds)
	g.of.add(g)
}

// close makes the gate inert for good: the node no longer uses the client.
func (g *seedGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.seeds.Store(nil)
	if g.of != nil {
		g.of.remove(g)
	}
}

// admit returns nil if the client may connect to addr: the gate is inert,
// or addr is no seed or one vouched for, or it was asked now and agrees
// (see clusterseeds.Checker.Admit). It makes the gate inert once every seed
// agreed, and takes it out of its client's gates.
func (g *seedGate) admit(ctx context.Context, addr string) error {
	seeds := g.seeds.Load()
	if seeds == nil || !seeds.Unvouched(addr) {
		return nil
	}
	if err := seeds.Admit(ctx, addr); err != nil {
		return err
	}
	if seeds.Settled() && g.seeds.CompareAndSwap(seeds, nil) {
		g.mu.Lock()
		g.of.remove(g)
		g.mu.Unlock()
	}
	return nil
}

// clientGates are the live seed gates over one *redis.ClusterClient of the
// caller's, and the one function that the first of them added to it
// (ClusterClient.OnNewNode, which go-redis cannot remove): every node client
// that the client makes from then on gets a hook that asks every gate live
// at its dial, also one made while no gate was live (by go-redis' reload,
// which runs in its own goroutine, after the node that started it was
// closed, say), since a gate installed later must hold it: go-redis keeps a
// seed's node client and reads its map from it once no node of its map
// answers. So a program that makes a node of New per request
// over one shared client, a seed of which is down for good, adds one
// function to it in all, not one per node. The registry (gated) holds a
// client's gates until the client is garbage-collected, by a weak pointer
// that keeps no client alive; the function holds them alone, not the
// client nor any node.
type clientGates struct {
	mu    sync.Mutex
	gates map[*seedGate]struct{}
}

// gated is the registry of clientGates, by their clients.
var gated struct {
	mu sync.Mutex
	m  map[weak.Pointer[redis.ClusterClient]]*clientGates
}

// gatesOf returns cc's gates, made (and their function added to cc) on the
// first call for cc.
func gatesOf(cc *redis.ClusterClient) *clientGates {
	key := weak.Make(cc)
	gated.mu.Lock()
	defer gated.mu.Unlock()
	if e := gated.m[key]; e != nil {
		return e
	}
	if gated.m == nil {
		gated.m = make(map[weak.Pointer[redis.ClusterClient]]*clientGates)
	}
	e := &clientGates{gates: make(map[*seedGate]struct{})}
	gated.m[key] = e
	runtime.AddCleanup(cc, func(key weak.Pointer[redis.ClusterClient]) {
		gated.mu.Lock()
		delete(gated.m, key)
		gated.mu.Unlock()
	}, key)
	onNewNode(cc, e.newNode)
	return e
}

// onNewNode is (*redis.ClusterClient).OnNewNode, which gatesOf calls
// through so that a test can count the functions added to a client.
var onNewNode = (*redis.ClusterClient).OnNewNode

// add makes g one of the live gates.
func (e *clientGates) add(g *seedGate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gates[g] = struct{}{}
}

// remove takes g out of the live gates; a node client already hooked then
// no longer asks it.
func (e *clientGates) remove(g *seedGate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.gates, g)
}

// live returns the live gates, or none.
func (e *clientGates) live() []*seedGate {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.gates) == 0 {
		return nil
	}
	gs := make([]*seedGate, 0, len(e.gates))
	for g := range e.gates {
		gs = append(gs, g)
	}
	return gs
}

// newNode is the function added to the client: it hooks every node client
// the client makes, a gate being live at its dial or not (a hook that finds
// none is the dial alone).
func (e *clientGates) newNode(rdb *redis.Client) {
	rdb.AddHook(admitHook{e})
}

// admitHook is the gates of a caller's cluster client on one of its node
// clients.
type admitHook struct{ e *clientGates }

// DialHook asks every live gate before next connects; the first that
// refuses fails the dial.
func (h admitHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		for _, g := range h.e.live() {
			if err := g.admit(ctx, addr); err != nil {
				return nil, err
			}
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
