package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/connalive"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/untildone"
)

var (
	_ driver.Fencer   = (*node)(nil)
	_ driver.Notifier = (*node)(nil)
	_ driver.TTLer    = (*node)(nil)

	_ drivernode.ChannelNotifier = (*node)(nil)
)

// errNoPubSub is what Subscribe returns on a node over a client other than a
// *redis.Client or a *redis.ClusterClient.
var errNoPubSub = errors.New("goredis: subscribe: release notifications need a *redis.Client or a *redis.ClusterClient")

// Subscribe subscribes to driver.ReleaseChannel(key) with SSUBSCRIBE over
// the node's one pub/sub connection, which the node makes on first use and
// shares among all its subscriptions (see package pubsub); on a cluster, over
// one connection per shard, following the channel when its slot moves or a
// failover replaces its shard's primary (see pubsub.Router).
func (n *node) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := n.state.Err(); err != nil {
		return nil, err
	}
	switch {
	case n.router != nil:
		if n.gate != nil {
			// The caller's cluster client (New): its seeds first, as
			// before the first call, since this may be its first
			// reading of the map (a waiter's subscription on a node
			// whose first SET has not begun), and the gate installed
			// before it makes node clients (Open's dialer gates its
			// own).
			if err := n.checkSeeds(ctx); err != nil {
				return nil, fmt.Errorf("goredis: subscribe: %w", driver.ContextError(ctx, err))
			}
		}
		return n.router.SubscribeRelease(ctx, "goredis", key, notify)
	case n.hub != nil:
		return n.hub.SubscribeRelease(ctx, "goredis", key, notify)
	}
	return nil, errNoPubSub
}

// newRouter returns the release subscriptions of a node over c: a hub per
// primary, which go-redis finds for a channel's slot (MasterForKey), and
// ReloadState after a slot moved or a shard's connection failed.
func newRouter(c *redis.ClusterClient) *pubsub.Router {
	route := func(ctx context.Context, channel string) (string, pubsub.Dialer, error) {
		m, err := c.MasterForKey(ctx, channel)
		if err != nil {
			return "", nil, err
		}
		return m.Options().Addr, func(ctx context.Context) (pubsub.Conn, error) { return dialPubSub(ctx, m) }, nil
	}
	return pubsub.NewRouter(route, c.ReloadState)
}

// pubSubDial marks the contexts of the pub/sub connection's commands. The
// dialer of a client made by Open closes a connection it dials with such a
// context (for the PubSub's first connection, or when go-redis reconnects it)
// when the context ends, which the hub's does when the hub drops the
// connection or is closed: go-redis does not watch the context in a
// handshake, and the hub's Close would wait for a handshake with a stalled
// server.
type pubSubDial struct{}

func markPubSub(ctx context.Context) context.Context {
	return context.WithValue(ctx, pubSubDial{}, true)
}

// dialPubSub makes the node's pub/sub connection, a *redis.PubSub that is
// connected (by a PING) before it is returned.
func (n *node) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	return dialPubSub(ctx, n.client)
}

// dialPubSub makes a pub/sub connection over c. It returns when ctx ends
// (the hub's Close) even if go-redis does not: a client the user made (New)
// dials and runs its handshake without watching the context, bounded only by
// its own timeouts, which a stalled server makes Close wait for otherwise. A
// connection made after that is closed. (The dialer of a client made by Open
// closes the connection when ctx ends: see pubSubDial.)
func dialPubSub(ctx context.Context, c redis.UniversalClient) (pubsub.Conn, error) {
	ctx = markPubSub(ctx)
	ps, err := pubsub.DialUntilDone(ctx, func() (*redis.PubSub, error) {
		ps := c.SSubscribe(ctx)
		if err := ps.Ping(ctx); err != nil {
			ps.Close()
			return nil, err
		}
		return ps, nil
	})
	if err != nil {
		return nil, err
	}
	return pubSubConn{ps}, nil
}

// pubSubConn is a pubsub.Conn over a *redis.PubSub. PubSub lets one goroutine
// receive while another subscribes. go-redis reconnects a PubSub whose
// connection failed, but the hub closes it on the first error instead and
// makes a new one when needed.
type pubSubConn struct{ ps *redis.PubSub }

func (c pubSubConn) Subscribe(ctx context.Context, channels ...string) error {
	return c.ps.SSubscribe(markPubSub(ctx), channels...)
}

func (c pubSubConn) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.ps.SUnsubscribe(markPubSub(ctx), channels...)
}

// Receive returns the connection's next event. A connection on which nothing
// came for pubSubIdle is sent a PING, and if nothing comes within pubSubPong
// after it, Receive fails: a server that hangs (a paused process, a frozen
// host) or a network that drops its packets leaves the connection open, and
// neither go-redis, which sets no read deadline and sends no PING on it, nor
// the hub would ever see that it was lost; on a cluster the router learns
// of the failover that promotes the shard's replica from that failure (see
// pubsub.Router), and a hub of one server reconnects. (The rueidis and
// valkey-go clients PING their connections themselves.)
func (c pubSubConn) Receive(ctx context.Context) (pubsub.Event, error) {
	ctx = markPubSub(ctx)
	msg, err := c.ps.ReceiveTimeout(ctx, pubSubIdle)
	if connalive.Timeout(err) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, pubSubPong)
		err = c.ps.Ping(pctx)
		cancel()
		if err == nil {
			msg, err = c.ps.ReceiveTimeout(ctx, pubSubPong)
			if connalive.Timeout(err) && ctx.Err() == nil {
				err = fmt.Errorf("goredis: nothing received %v after a PING, sent after %v without a message (the server hangs?): %w", pubSubPong, pubSubIdle, err)
			}
		}
	}
	if err != nil {
		return pubsub.Event{}, err
	}
	switch m := msg.(type) {
	case *redis.Message:
		return pubsub.Event{Kind: pubsub.Message, Channel: m.Channel}, nil
	case *redis.Subscription:
		return pubsub.Event{Kind: pubsub.KindOf(m.Kind), Channel: m.Channel}, nil
	}
	return pubsub.Event{}, nil
}

func (c pubSubConn) Close() error { return c.ps.Close() }

// A pub/sub connection idle for pubSubIdle is sent a PING, and is taken as
// lost when nothing comes within pubSubPong after it (see
// pubSubConn.Receive): a hung server is found within their sum.
const (
	pubSubIdle = 3 * time.Second
	pubSubPong = 5 * time.Second
)

var _ driver.Identifier = (*node)(nil)

// Identity returns the IDs of the servers the node reaches (see
// driver.Identifier): a cluster's node IDs, or a server's run_id and, if it
// is cluster-enabled, its node ID.
func (n *node) Identity(ctx context.Context) ([]string, error) {
	if err := n.state.Err(); err != nil {
		return nil, err
	}
	if _, ok := n.client.(*redis.Client); !ok && !n.cluster {
		return nil, nil // a Ring, say: no one server to name
	}
	ids, err := untildone.Do(ctx, func() ([]string, error) { return n.identity(ctx) }, nil)
	if err != nil {
		return nil, fmt.Errorf("goredis: identity: %w", driver.ContextError(ctx, err))
	}
	return ids, nil
}

func (n *node) identity(ctx context.Context) ([]string, error) {
	if n.cluster {
		if n.gate != nil {
			// The caller's cluster client (New): its seeds first, as
			// before the first call, since this may be its first
			// reading of the map, and the gate installed before it
			// makes node clients (Open's dialer gates its own).
			if err := n.checkSeeds(ctx); err != nil {
				return nil, err
			}
		}
		cmd := routed(redis.NewStringCmd(ctx, "cluster", "nodes"))
		_ = n.client.Process(ctx, cmd)
		nodes, err := cmd.Result()
		return driver.IdentityOf("", nodes), err
	}
	info, err := n.client.Info(ctx, "server", "cluster").Result()
	if err != nil {
		return nil, err
	}
	var myID string
	if strings.Contains(info, "cluster_enabled:1") {
		if myID, err = n.client.Do(ctx, "CLUSTER", "MYID").Text(); err != nil {
			return nil, err
		}
	}
	return driver.IdentityOf(info, myID), nil
}
