package rueidiscore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// errNoPubSub is what Subscribe returns on a node over a cluster client.
var errNoPubSub = errors.New("release notifications need a client of one server, not a cluster client")

// SetNXFence runs driver.SetNXFenceScript: SET key value NX PX ttl, and the
// counter at fenceKey read in the same step.
func (n *node[C, D, R, L]) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	return rediscmd.OKCounter(n.do(ctx, rediscmd.SetNXFence(key, value, ttl, fenceKey)))
}

// RaiseFence runs driver.RaiseFenceScript.
func (n *node[C, D, R, L]) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.RaiseFence(key, value, fenceKey, token)))
}

// ReleaseNotify runs driver.ReleaseNotifyScript, which publishes the release
// on driver.ReleaseChannel(key).
func (n *node[C, D, R, L]) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.ReleaseNotify(key, value)))
}

// Subscribe subscribes to driver.ReleaseChannel(key) over the node's one
// pub/sub connection, which the node makes on first use and shares among all
// its subscriptions (see package pubsub).
func (n *node[C, D, R, L]) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if s := n.cur.Load(); s != nil && s.err != nil {
		return nil, s.err // closed, or New(nil)
	}
	return n.hub.SubscribeRelease(ctx, n.lib.Name, key, notify)
}

// dialPubSub makes the node's pub/sub connection: a dedicated connection of
// its client, with pub/sub hooks.
func (n *node[C, D, R, L]) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if n.lib.Cluster(c) {
		return nil, errNoPubSub
	}
	conn := &pubSubConn[C, D, R, L]{lib: n.lib, dc: n.dedicate(c), signal: make(chan struct{}, 1)}
	conn.errs = n.lib.SetHooks(conn.dc, Hooks{OnMessage: conn.onMessage, OnSubscription: conn.onSubscription})
	select {
	case err := <-conn.errs: // the dial failed
		conn.Close()
		if err == nil {
			err = errors.New("connection closed")
		}
		return nil, err
	default:
	}
	return conn, nil
}

// dedicate takes a dedicated connection of c, which the library dials in
// Dedicate. A node made by Open lets its client dial for it (see dial). The
// connection is closed, never given back: its pub/sub state is its own.
func (n *node[C, D, R, L]) dedicate(c C) D {
	n.mu.Lock()
	n.dedicating++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.dedicating--
		n.mu.Unlock()
	}()
	dc, _ := c.Dedicate()
	return dc
}

// pubSubConn is a pubsub.Conn over a dedicated client. The client's pub/sub
// hooks queue what they receive for Receive; SSUBSCRIBE and SUNSUBSCRIBE go
// through the library's Subscribe and Unsubscribe.
type pubSubConn[C Client[C, D], D Dedicated, R Result, L any] struct {
	lib    *Library[C, D, R, L]
	dc     D
	errs   <-chan error // from SetHooks: the connection ended
	signal chan struct{}

	mu    sync.Mutex
	queue []pubsub.Event
}

func (c *pubSubConn[C, D, R, L]) push(ev pubsub.Event) {
	c.mu.Lock()
	c.queue = append(c.queue, ev)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *pubSubConn[C, D, R, L]) onMessage(channel string) {
	c.push(pubsub.Event{Kind: pubsub.Message, Channel: channel})
}

func (c *pubSubConn[C, D, R, L]) onSubscription(kind, channel string) {
	c.push(pubsub.Event{Kind: pubsub.KindOf(kind), Channel: channel})
}

func (c *pubSubConn[C, D, R, L]) Subscribe(ctx context.Context, channels ...string) error {
	return c.lib.Subscribe(ctx, c.dc, channels...)
}

func (c *pubSubConn[C, D, R, L]) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.lib.Unsubscribe(ctx, c.dc, channels...)
}

func (c *pubSubConn[C, D, R, L]) Receive(ctx context.Context) (pubsub.Event, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			ev := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return ev, nil
		}
		c.mu.Unlock()
		select {
		case <-c.signal:
		case err, ok := <-c.errs:
			if !ok || err == nil {
				err = errors.New("connection closed")
			}
			return pubsub.Event{}, err
		case <-ctx.Done():
			return pubsub.Event{}, ctx.Err()
		}
	}
}

// Close closes the dedicated connection, which also gives it back.
func (c *pubSubConn[C, D, R, L]) Close() error {
	c.dc.Close()
	return nil
}

var (
	_ driver.Fencer   = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Notifier = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Node     = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ pubsub.Conn     = (*pubSubConn[nopClient, nopDedicated, nopResult, struct{}])(nil)
)
