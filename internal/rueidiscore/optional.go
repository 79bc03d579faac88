package rueidiscore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/pubsub"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// Subscribe subscribes to driver.ReleaseChannel(key) over the node's one
// pub/sub connection, which the node makes on first use and shares among all
// its subscriptions (see package pubsub).
func (n *node[C, D, R, L]) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if s := n.cur.Load(); s != nil && s.err != nil {
		return nil, s.err // closed, or New(nil)
	}
	if n.router != nil {
		return n.router.SubscribeRelease(ctx, n.lib.Name, key, notify)
	}
	return n.hub.SubscribeRelease(ctx, n.lib.Name, key, notify)
}

// startPubSub makes the node's release subscriptions: one hub over one
// dedicated connection for a server; for a cluster, a hub per shard, each
// over a dedicated connection to the shard's primary (see route).
func (n *node[C, D, R, L]) startPubSub() {
	if n.cluster {
		n.router = pubsub.NewRouter(n.route, n.slots.reset)
		return
	}
	n.hub = pubsub.New(n.dialPubSub)
}

// pubSubClosing is Hub.Closing (or Router.Closing) of the node's
// subscriptions.
func (n *node[C, D, R, L]) pubSubClosing() {
	if n.router != nil {
		n.router.Closing()
		return
	}
	n.hub.Closing()
}

// pubSubClose closes the node's subscriptions.
func (n *node[C, D, R, L]) pubSubClose() {
	if n.router != nil {
		n.router.Close()
		return
	}
	n.hub.Close()
}

// route finds the primary that serves channel's slot on the cluster (see
// pubsub.Route), from the slot map the node reads with CLUSTER SLOTS and
// reads again after the router's refresh (n.slots.reset), which it calls when
// a channel's slot left its shard, a shard answered a SSUBSCRIBE with MOVED,
// or a shard's connection failed (its primary may have been replaced by a
// failover); the client's creation reads it first (see warm).
func (n *node[C, D, R, L]) route(ctx context.Context, channel string) (string, pubsub.Dialer, error) {
	c, err := n.client(ctx)
	if err != nil {
		return "", nil, err
	}
	addr, err := n.slots.owner(ctx, driver.HashSlot(channel), func(ctx context.Context, primaries map[string]bool) ([]slotRange, error) {
		return n.readSlots(ctx, nodesOf(c, primaries))
	})
	if err != nil {
		return "", nil, err
	}
	nc, ok := c.Nodes()[addr]
	if !ok {
		// A primary the client does not know: a replica that the
		// client's map of the cluster did not list (added, or not yet
		// replicating, when the client read it) and that a failover
		// promoted. The client learns of a new primary only from its
		// commands: one on the channel's slot reaches it through the old
		// primary's MOVED, which the client follows (and connects to).
		n.touchSlot(ctx, c, channel)
		nc, ok = c.Nodes()[addr]
	}
	if !ok {
		return "", nil, fmt.Errorf("the client has no connection to %s, which serves the slot of the channel", redisaddr.Redact(addr))
	}
	return addr, func(ctx context.Context) (pubsub.Conn, error) { return n.dialPubSubOn(ctx, nc) }, nil
}

// touchSlot sends through c, a cluster client, a command that reads the
// lock key of channel, in the channel's slot, and changes nothing: the
// script that reads a key's TTL if it holds the empty value, which no lock
// has. Its reply does not matter: only the redirection the client follows,
// and the map it reads again on a MOVED or a failure.
func (n *node[C, D, R, L]) touchSlot(ctx context.Context, c C, channel string) {
	key := channel
	if _, k, ok := strings.Cut(channel, "}"); ok && k != "" {
		key = k // the lock key, which the ACL lets the node touch: driver.ReleaseChannel
	}
	cmd := rediscmd.TTL(key, "")
	_, _ = n.bounded(ctx, func() (any, error) { return n.send(ctx, c, &cmd).ToAny() })
}

// dialPubSub makes the node's pub/sub connection: a dedicated connection of
// its client, with pub/sub hooks.
func (n *node[C, D, R, L]) dialPubSub(ctx context.Context) (pubsub.Conn, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	return n.dialPubSubOn(ctx, c)
}

// dialPubSubOn makes a pub/sub connection: a dedicated connection of c, a
// client of one server, with pub/sub hooks. It returns ctx's error as soon as
// ctx ends (the hub's Close): the library dials and handshakes in Dedicate,
// which has no context, bounded only by the client's dial timeout (seconds)
// on a stalled server, unless the node made the client (see dial). A
// connection made after that is closed.
func (n *node[C, D, R, L]) dialPubSubOn(ctx context.Context, c C) (pubsub.Conn, error) {
	if n.owned {
		return n.dialPubSubNow(c) // its dial ends at the node's Close
	}
	return pubsub.DialUntilDone(ctx, func() (pubsub.Conn, error) { return n.dialPubSubNow(c) })
}

// dialPubSubNow is dialPubSubOn, unbounded by a context.
func (n *node[C, D, R, L]) dialPubSubNow(c C) (pubsub.Conn, error) {
	conn := &pubSubConn[C, D, R, L]{lib: n.lib, dc: n.dedicate(c), signal: make(chan struct{}, 1), background: !n.owned}
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
	// background is set for a connection of a client the caller made
	// (New): Close closes it in the background (see Close).
	background bool

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

// Close closes the dedicated connection, which also gives it back. The
// library's Close sends a PING and waits up to a second for its reply, which
// a stalled server never sends: on a client the caller made, whose
// connection the node cannot break first (as a node made by Open does: see
// dial), Close returns at once and the closing goes on in the background,
// for that second at most. A Receive, Subscribe or Unsubscribe in progress
// returns with the hub's context, which it cancels first.
func (c *pubSubConn[C, D, R, L]) Close() error {
	if c.background {
		go c.dc.Close()
		return nil
	}
	c.dc.Close()
	return nil
}

var (
	_ driver.Fencer     = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Notifier   = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Identifier = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.TTLer      = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Node       = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ driver.Queuer     = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
	_ pubsub.Conn       = (*pubSubConn[nopClient, nopDedicated, nopResult, struct{}])(nil)

	_ drivernode.ChannelNotifier = (*node[nopClient, nopDedicated, nopResult, struct{}])(nil)
)

// Identity returns the IDs of the servers the node reaches (see
// driver.Identifier): a cluster's node IDs, or a server's run_id and, if it
// is cluster-enabled, its node ID.
func (n *node[C, D, R, L]) Identity(ctx context.Context) ([]string, error) {
	ids, err := n.identity(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: identity: %w", n.lib.Name, driver.ContextError(ctx, err))
	}
	return ids, nil
}

func (n *node[C, D, R, L]) identity(ctx context.Context) ([]string, error) {
	c, err := n.client(ctx)
	if err != nil {
		return nil, err
	}
	text := func(args ...string) (string, error) {
		var v any
		var err error
		if n.cluster {
			v, _, err = n.askAny(ctx, nodesOf(c, n.slots.knownPrimaries()), args...) // a hung replica's last
		} else {
			v, err = n.bounded(ctx, func() (any, error) { return n.lib.Do(ctx, c, args...).ToAny() })
		}
		if err != nil {
			return "", err
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s: unexpected reply of type %T", args[0], v)
		}
		// A RESP3 verbatim string keeps its format: "txt:...".
		if len(s) >= 4 && s[3] == ':' && (strings.HasPrefix(s, "txt") || strings.HasPrefix(s, "mkd")) {
			s = s[4:]
		}
		return s, nil
	}
	if n.cluster {
		nodes, err := text("CLUSTER", "NODES")
		return driver.IdentityOf("", nodes), err
	}
	info, err := text("INFO", "server")
	if err != nil {
		return nil, err
	}
	cluster, err := text("INFO", "cluster")
	if err != nil {
		return nil, err
	}
	var myID string
	if strings.Contains(cluster, "cluster_enabled:1") {
		if myID, err = text("CLUSTER", "MYID"); err != nil {
			return nil, err
		}
	}
	return driver.IdentityOf(info, myID), nil
}

// Pending reports the calls waiting to be handed to the node's client, which
// holds at most MaxInFlight at once, more for a far server (see driver.Queuer
// and batch.Gate): the node timeout then bounds a call's time on the network,
// from the moment it is handed over, and not its wait behind thousands of
// others, which its context bounds.
func (n *node[C, D, R, L]) Pending() driver.Pending {
	if n.gate == nil {
		return driver.Pending{} // New(nil)
	}
	return n.gate.Pending()
}
