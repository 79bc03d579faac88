package redigo

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"

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
	return pubSubConn{redis.PubSubConn{Conn: c}}, nil
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
	type result struct {
		c   redis.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := p.Dial()
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// pubSubConn is a pubsub.Conn over a redis.PubSubConn. A redigo connection
// allows one goroutine to receive while another sends.
type pubSubConn struct{ psc redis.PubSubConn }

func (c pubSubConn) Subscribe(_ context.Context, channels ...string) error {
	return c.psc.Subscribe(redis.Args{}.AddFlat(channels)...)
}

func (c pubSubConn) Unsubscribe(_ context.Context, channels ...string) error {
	return c.psc.Unsubscribe(redis.Args{}.AddFlat(channels)...)
}

// Receive waits for the next event without a deadline, whatever read timeout
// the pool's connections have: a quiet channel is not a failure.
func (c pubSubConn) Receive(context.Context) (pubsub.Event, error) {
	var v any
	if _, ok := c.psc.Conn.(redis.ConnWithTimeout); ok {
		v = c.psc.ReceiveWithTimeout(0)
	} else {
		v = c.psc.Receive()
	}
	switch m := v.(type) {
	case error:
		return pubsub.Event{}, m
	case redis.Message:
		return pubsub.Event{Kind: pubsub.Message, Channel: m.Channel}, nil
	case redis.Subscription:
		switch m.Kind {
		case "subscribe":
			return pubsub.Event{Kind: pubsub.Subscribed, Channel: m.Channel}, nil
		case "unsubscribe":
			return pubsub.Event{Kind: pubsub.Unsubscribed, Channel: m.Channel}, nil
		}
	}
	return pubsub.Event{}, nil
}

func (c pubSubConn) Close() error { return c.psc.Close() }
