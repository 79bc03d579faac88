package redigo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/pubsub"
)

var (
	_ driver.Fencer   = (*node)(nil)
	_ driver.Notifier = (*node)(nil)
	_ driver.TTLer    = (*node)(nil)

	_ drivernode.ChannelNotifier = (*node)(nil)
)

// Subscribe subscribes to driver.ReleaseChannel(key) over the node's one
// pub/sub connection, which the node makes on first use and shares among all
// its subscriptions (see package pubsub).
func (n *node) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := n.state.Err(); err != nil {
		return nil, err
	}
	return n.hub.SubscribeRelease(ctx, "redigo", key, notify)
}

// dialPubSub makes the node's pub/sub connection with the pool's dial
// function. The connection is the node's own: it never goes to the pool.
func (n *node) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	c, err := n.dial(ctx)
	if err != nil {
		return nil, err
	}
	return pubSubConn{c}, nil
}

// dial calls the pool's DialContext, or its Dial, which cannot be
// interrupted: dial then returns when ctx ends, and a connection that comes
// later is closed.
func (n *node) dial(ctx context.Context) (redis.Conn, error) {
	p := n.pool
	switch {
	case p.DialContext != nil:
		return p.DialContext(ctx)
	case p.Dial == nil:
		return nil, errors.New("redigo: the pool has no DialContext or Dial function")
	}
	return pubsub.DialUntilDone(ctx, p.Dial)
}

// pubSubConn is a pubsub.Conn over a redigo connection, which allows one
// goroutine to receive while another sends. redigo's PubSubConn knows no
// sharded pub/sub, whose pushes Receive reads itself.
type pubSubConn struct{ c redis.Conn }

func (c pubSubConn) Subscribe(_ context.Context, channels ...string) error {
	return c.send("SSUBSCRIBE", channels)
}

func (c pubSubConn) Unsubscribe(_ context.Context, channels ...string) error {
	return c.send("SUNSUBSCRIBE", channels)
}

func (c pubSubConn) send(cmd string, channels []string) error {
	if err := c.c.Send(cmd, redis.Args{}.AddFlat(channels)...); err != nil {
		return err
	}
	return c.c.Flush()
}

// Receive waits for the next event without a deadline, whatever read timeout
// the pool's connections have: a quiet channel is not a failure.
func (c pubSubConn) Receive(context.Context) (pubsub.Event, error) {
	var (
		v   any
		err error
	)
	if cwt, ok := c.c.(redis.ConnWithTimeout); ok {
		v, err = cwt.ReceiveWithTimeout(0)
	} else {
		v, err = c.c.Receive()
	}
	push, err := redis.Values(v, err)
	if err != nil {
		return pubsub.Event{}, err
	}
	var kind, channel string
	if _, err := redis.Scan(push, &kind, &channel); err != nil {
		return pubsub.Event{}, err
	}
	return pubsub.Event{Kind: pubsub.KindOf(kind), Channel: channel}, nil
}

func (c pubSubConn) Close() error { return c.c.Close() }

var _ driver.Identifier = (*node)(nil)

// Identity returns the server's run_id and, if it is cluster-enabled, its
// node ID (see driver.Identifier).
func (n *node) Identity(ctx context.Context) ([]string, error) {
	c, err := n.conn(ctx, ctx)
	if err != nil {
		return nil, fmt.Errorf("redigo: identity: %w", driver.ContextError(ctx, err))
	}
	defer c.Close()
	info, err := redis.String(redis.DoContext(c, ctx, "INFO", "server"))
	var myID string
	if err == nil {
		var cluster string
		if cluster, err = redis.String(redis.DoContext(c, ctx, "INFO", "cluster")); err == nil && strings.Contains(cluster, "cluster_enabled:1") {
			myID, err = redis.String(redis.DoContext(c, ctx, "CLUSTER", "MYID"))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("redigo: identity: %w", driver.ContextError(ctx, err))
	}
	return driver.IdentityOf(info, myID), nil
}
