package goredis

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

var (
	_ driver.Fencer   = (*node)(nil)
	_ driver.Notifier = (*node)(nil)
	_ driver.TTLer    = (*node)(nil)
)

// SetNXFence runs driver.SetNXFenceScript: SET key value NX PX ttl, and the
// counter at fenceKey read in the same step.
func (n *node) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	return rediscmd.OKCounter(n.do(ctx, rediscmd.SetNXFence(key, value, ttl, fenceKey)))
}

// RaiseFence runs driver.RaiseFenceScript.
func (n *node) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.RaiseFence(key, value, fenceKey, token)))
}

// TTL runs driver.TTLScript: the key's PTTL if it holds value.
func (n *node) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	return rediscmd.TTLHeld(n.do(ctx, rediscmd.TTL(key, value)))
}

// ReleaseNotify runs driver.ReleaseNotifyScript, which publishes the release
// on driver.ReleaseChannel(key).
func (n *node) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.ReleaseNotify(key, value)))
}

// errNoPubSub is what Subscribe returns on a node over a client other than a
// *redis.Client.
var errNoPubSub = errors.New("goredis: subscribe: release notifications need a *redis.Client")

// Subscribe subscribes to driver.ReleaseChannel(key) over the node's one
// pub/sub connection, which the node makes on first use and shares among all
// its subscriptions (see package pubsub).
func (n *node) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := n.state.Err(); err != nil {
		return nil, err
	}
	if n.hub == nil {
		return nil, errNoPubSub
	}
	return n.hub.SubscribeRelease(ctx, "goredis", key, notify)
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
	ctx = markPubSub(ctx)
	ps := n.client.Subscribe(ctx)
	if err := ps.Ping(ctx); err != nil {
		ps.Close()
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
	return c.ps.Subscribe(markPubSub(ctx), channels...)
}

func (c pubSubConn) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.ps.Unsubscribe(markPubSub(ctx), channels...)
}

func (c pubSubConn) Receive(ctx context.Context) (pubsub.Event, error) {
	msg, err := c.ps.Receive(markPubSub(ctx))
	if err != nil {
		return pubsub.Event{}, err
	}
	switch m := msg.(type) {
	case *redis.Message:
		return pubsub.Event{Kind: pubsub.Message, Channel: m.Channel}, nil
	case *redis.Subscription:
		switch m.Kind {
		case "subscribe":
			return pubsub.Event{Kind: pubsub.Subscribed, Channel: m.Channel}, nil
		case "unsubscribe":
			return pubsub.Event{Kind: pubsub.Unsubscribed, Channel: m.Channel}, nil
		}
	}
	return pubsub.Event{}, nil
}

func (c pubSubConn) Close() error { return c.ps.Close() }
