package rueidis

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

var (
	_ driver.Fencer   = (*node)(nil)
	_ driver.Notifier = (*node)(nil)
)

// errNoPubSub is what Subscribe returns on a node over a cluster client.
var errNoPubSub = errors.New("release notifications need a client of one server, not a cluster client")

// SetNXFence runs driver.SetNXFenceScript: SET key value NX PX ttl, and the
// counter at fenceKey read in the same step.
func (n *node) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	return rediscmd.OKCounter(n.do(ctx, rediscmd.SetNXFence(key, value, ttl, fenceKey)))
}

// RaiseFence runs driver.RaiseFenceScript.
func (n *node) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return rediscmd.OK(n.do(ctx, rediscmd.RaiseFence(key, value, fenceKey, token)))
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
	if s := n.cur.Load(); s != nil && s.err != nil {
		return nil, s.err // closed, or New(nil)
	}
	return n.hub.SubscribeRelease(ctx, "rueidis", key, notify)
}

// dialPubSub makes the node's pub/sub connection: a dedicated connection of
// its client, with pub/sub hooks.
func (n *node) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	if c.Mode() == rueidis.ClientModeCluster {
		return nil, errNoPubSub
	}
	dc, release := n.dedicate(c)
	conn := &pubSubConn{dc: dc, release: release, signal: make(chan struct{}, 1)}
	conn.errs = dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: conn.onMessage, OnSubscription: conn.onSubscription})
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

// dedicate takes a dedicated connection of c, which rueidis dials in
// Dedicate. A node made by Open lets its client dial for it (see dial).
func (n *node) dedicate(c rueidis.Client) (rueidis.DedicatedClient, func()) {
	n.mu.Lock()
	n.dedicating++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.dedicating--
		n.mu.Unlock()
	}()
	return c.Dedicate()
}

// pubSubConn is a pubsub.Conn over a rueidis DedicatedClient. The client's
// pub/sub hooks queue what they receive for Receive; SSUBSCRIBE and
// SUNSUBSCRIBE go through Do.
type pubSubConn struct {
	dc      rueidis.DedicatedClient
	release func()
	errs    <-chan error // from SetPubSubHooks: the connection ended
	signal  chan struct{}

	mu    sync.Mutex
	queue []pubsub.Event
}

func (c *pubSubConn) push(ev pubsub.Event) {
	c.mu.Lock()
	c.queue = append(c.queue, ev)
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

func (c *pubSubConn) onMessage(m rueidis.PubSubMessage) {
	c.push(pubsub.Event{Kind: pubsub.Message, Channel: m.Channel})
}

func (c *pubSubConn) onSubscription(s rueidis.PubSubSubscription) {
	c.push(pubsub.Event{Kind: pubsub.KindOf(s.Kind), Channel: s.Channel})
}

func (c *pubSubConn) Subscribe(ctx context.Context, channels ...string) error {
	return c.dc.Do(ctx, c.dc.B().Ssubscribe().Channel(channels...).Build()).Error()
}

func (c *pubSubConn) Unsubscribe(ctx context.Context, channels ...string) error {
	return c.dc.Do(ctx, c.dc.B().Sunsubscribe().Channel(channels...).Build()).Error()
}

func (c *pubSubConn) Receive(ctx context.Context) (pubsub.Event, error) {
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

// Close closes the dedicated connection rather than return it to the pool.
func (c *pubSubConn) Close() error {
	if cl, ok := c.dc.(interface{ Close() }); ok {
		cl.Close()
	} else {
		c.release()
	}
	return nil
}
