package pubsub

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Route finds the shard of a Redis Cluster that serves channel (sharded
// pub/sub: the primary of the channel's hash slot): a name that identifies
// the shard, such as its address, and a Dialer that connects to it.
type Route func(ctx context.Context, channel string) (shard string, dial Dialer, err error)

// followTimeout bounds the subscription of a moved channel at its new shard.
const followTimeout = 5 * time.Second

// maxMoved is how many MOVED replies a subscription meets before Subscribe
// gives up: each makes the route learn the slot map again.
const maxMoved = 4

// A shard's lost connection is recovered (see Router.recover) after
// recoverFirst, and then every recoverEvery at most.
const (
	recoverFirst = 100 * time.Millisecond
	recoverEvery = time.Second
)

// Router shares one [Hub] per shard of a Redis Cluster among the
// subscribers of a node: each channel is subscribed on the hub of the shard
// that serves it, and when the channel's slot moves, its subscribers follow
// it to the new shard. A shard that answers MOVED to a channel's SSUBSCRIBE
// (the route knew the slot map from before the slot moved) makes the router
// learn the slot map again and subscribe the channel where the slot is now;
// the shard's other channels are not disturbed. A shard whose connection
// fails, or cannot be dialed, may have lost its primary to a failover, which
// sends neither MOVED nor SUNSUBSCRIBE: the router learns the slot map again
// and moves the shard's subscribers to the shard that serves their channels
// now, or, while the route still gives the same shard, reconnects its hub,
// until it is connected or has no subscriber left (see recover). Its methods
// are safe for concurrent use.
type Router struct {
	route   Route
	refresh func(ctx context.Context) // makes route learn the slot map again; may be nil

	ctx    context.Context // canceled by Close: ends the followings in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup // the followings in flight

	mu         sync.Mutex
	closed     bool
	hubs       map[string]*Hub
	followers  map[string]map[*follower]struct{} // by channel
	recovering map[string]bool                   // shards whose lost connection recover handles; true if lost again since it looked
}

// follower is one subscription through the router; it moves between hubs.
// Its fields are guarded by Router.mu.
type follower struct {
	notify chan<- struct{}
	hub    string // the shard it is subscribed, or being subscribed, at; "" while neither
	cancel func() // its subscription on that hub; nil while it has none
	done   bool   // canceled by its owner

	// attaching is set while attach subscribes it at hub, and stale when
	// the hub dropped the channel meanwhile (its slot left the shard):
	// attach then subscribes it again where the slot went.
	attaching, stale bool
	// heard is set once it was first subscribed: when attach subscribes it
	// again (it followed its slot, or its shard's connection failed), it
	// is notified, since a release may have been published meanwhile.
	heard bool
}

// NewRouter returns a router that finds shards with route, and calls refresh
// (when not nil) before routing again a channel whose slot moved, or that a
// shard answered with MOVED, or whose shard's connection failed.
func NewRouter(route Route, refresh func(ctx context.Context)) *Router {
	ctx, cancel := context.WithCancel(context.Background())
	return &Router{
		route: route, refresh: refresh, ctx: ctx, cancel: cancel,
		hubs: make(map[string]*Hub), followers: make(map[string]map[*follower]struct{}),
		recovering: make(map[string]bool),
	}
}

// SubscribeRelease is [Hub.SubscribeRelease] through the router.
func (r *Router) SubscribeRelease(ctx context.Context, driverName, key string, notify chan<- struct{}) (cancel func(), err error) {
	cancel, err = r.Subscribe(ctx, driver.ReleaseChannel(key), notify)
	if err != nil {
		return nil, fmt.Errorf("%s: subscribe: %w", driverName, driver.ContextError(ctx, err))
	}
	return cancel, nil
}

// Subscribe is [Hub.Subscribe] on the hub of the shard that serves channel.
// If that shard answers MOVED, Subscribe learns the slot map again (refresh)
// and subscribes where the slot went, a few times at most. After the
// channel's slot moves, or its shard's connection fails (see recover), the
// subscription follows it: notify hears nothing until it is subscribed at
// the new shard, or again at the same one (or ever, if that fails), but
// cancel still ends it; once subscribed again, it is notified once, since a
// release may have been published meanwhile.
func (r *Router) Subscribe(ctx context.Context, channel string, notify chan<- struct{}) (cancel func(), err error) {
	f := &follower{notify: notify}
	// Registered before it is subscribed: a slot that moves while it is
	// being subscribed marks it stale (see moved), and attach follows.
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, driver.ErrClosed
	}
	if r.followers[channel] == nil {
		r.followers[channel] = make(map[*follower]struct{})
	}
	r.followers[channel][f] = struct{}{}
	r.mu.Unlock()
	if err := r.attach(ctx, channel, f); err != nil {
		r.remove(channel, f)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { r.remove(channel, f) }) }, nil
}

// attach subscribes f to channel on the hub of the shard that serves it. If
// the shard answers MOVED, or drops the channel as soon as it confirmed it
// (its slot left the shard), attach learns the slot map again and subscribes
// f where the slot went, up to maxMoved times.
func (r *Router) attach(ctx context.Context, channel string, f *follower) error {
	for moves := 1; ; moves++ {
		shard, dial, err := r.route(ctx, channel)
		if err != nil {
			if r.refresh != nil && ctx.Err() == nil {
				r.refresh(ctx) // the map may name a primary the client no longer knows
			}
			return err
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return driver.ErrClosed
		}
		if f.done {
			r.mu.Unlock()
			return nil
		}
		h := r.hubs[shard]
		if h == nil {
			h = NewMoving(dial, func(channel string) { r.moved(shard, channel) }, func() { r.lost(shard) })
			r.hubs[shard] = h
		}
		f.hub, f.attaching, f.stale = shard, true, false
		r.mu.Unlock()
		cancel, err := h.Subscribe(ctx, channel, f.notify)
		r.mu.Lock()
		f.attaching = false
		if err == nil && !f.done && !f.stale {
			f.cancel = cancel
			if f.heard {
				wake(f.notify)
			}
			f.heard = true
			r.mu.Unlock()
			return nil
		}
		f.hub = ""
		done := f.done
		f.stale = false
		r.mu.Unlock()
		if err == nil {
			cancel() // the hub's remove takes its own lock only
		}
		switch {
		case done:
			return nil
		case err != nil && !IsMoved(err):
			return err
		case moves == maxMoved && err != nil:
			return err
		case moves == maxMoved:
			return fmt.Errorf("subscribe %s: its slot keeps leaving the shard that serves it", channel)
		}
		// MOVED, or stale: the slot is served by another shard.
		if err := r.reroute(ctx, channel, shard); err != nil {
			return err
		}
	}
}

// remove ends f's subscription.
func (r *Router) remove(channel string, f *follower) {
	r.mu.Lock()
	f.done = true
	cancel := f.cancel
	f.cancel = nil
	if fs := r.followers[channel]; fs != nil {
		delete(fs, f)
		if len(fs) == 0 {
			delete(r.followers, channel)
		}
	}
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// moved subscribes again, where it now is, each follower of channel that
// the hub of shard has dropped because the channel's slot left the shard. A
// follower that attach is subscribing at shard is marked stale instead:
// attach follows the slot itself.
func (r *Router) moved(shard, channel string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	var fs []*follower
	for f := range r.followers[channel] {
		switch {
		case f.hub != shard:
		case f.attaching:
			f.stale = true
		default:
			f.hub, f.cancel = "", nil // the hub dropped it
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return
	}
	r.wg.Add(1)
	go r.follow(shard, channel, fs)
}

// follow attaches the followers fs of channel again, once the route no
// longer gives the shard the channel left (or after a second of trying).
// A follower whose attach fails (the new shard cannot be reached yet, say)
// is kept at from without a subscription, and from is recovered (see
// recover): rehome attaches it again, at growing intervals, until it has a
// subscription or is canceled, rather than leave its waiter polling.
func (r *Router) follow(from, channel string, fs []*follower) {
	defer r.wg.Done()
	ctx, cancel := context.WithTimeout(r.ctx, followTimeout)
	defer cancel()
	if r.reroute(ctx, channel, from) != nil {
		r.retryLater(from, fs)
		return
	}
	var failed []*follower
	for _, f := range fs {
		if r.attach(ctx, channel, f) != nil {
			failed = append(failed, f)
		}
	}
	r.retryLater(from, failed)
}

// retryLater keeps the followers fs, whose attach failed, at shard without
// a subscription, and starts recovering shard, whose rehome attaches them
// again. A follower canceled, or attached, meanwhile is left alone.
func (r *Router) retryLater(shard string, fs []*follower) {
	kept := false
	r.mu.Lock()
	for _, f := range fs {
		if f.hub == "" && !f.attaching && !f.done {
			f.hub, kept = shard, true
		}
	}
	r.mu.Unlock()
	if kept {
		r.lost(shard)
	}
}

// reroute makes the route learn the slot map again (refresh) until it no
// longer gives shard from for channel, or a second has passed; it returns
// ctx's error if ctx ends first.
func (r *Router) reroute(ctx context.Context, channel, from string) error {
	for wait := 10 * time.Millisecond; wait < time.Second; wait *= 2 {
		if r.refresh != nil {
			r.refresh(ctx)
		}
		if shard, _, err := r.route(ctx, channel); err == nil && shard != from {
			return nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// lost starts recovering shard, whose hub's connection failed or could not
// be dialed (see recover), unless it is being recovered: recover then looks
// again.
func (r *Router) lost(shard string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if _, ok := r.recovering[shard]; ok {
		r.recovering[shard] = true
		return
	}
	r.recovering[shard] = false
	r.wg.Add(1)
	go r.recover(shard)
}

// recover handles the lost connection of shard, which a failover may have
// replaced by a promoted replica: after a short while (for the cluster to
// promote it), and then at growing intervals up to recoverEvery, it makes
// the route learn the slot map again (refresh) and moves the followers at
// shard whose channels are served elsewhere now (see rehome); while some
// are still served by shard, it reconnects shard's hub, which subscribes
// them again, waiting for that at most followTimeout per round (see
// reconnect). It ends once shard has no follower left or its hub is
// connected, every follower it moved has its subscription, and no
// connection was lost since; or when the router closes.
func (r *Router) recover(shard string) {
	defer r.wg.Done()
	wait := recoverFirst
	for {
		select {
		case <-time.After(wait):
		case <-r.ctx.Done():
			return // Close: recovering no longer matters
		}
		wait = min(2*wait, recoverEvery)
		r.mu.Lock()
		r.recovering[shard] = false
		h := r.hubs[shard]
		r.mu.Unlock()
		if r.refresh != nil {
			r.refresh(r.ctx)
		}
		stay, retry := r.rehome(shard)
		if stay && r.reconnect(h) != nil {
			continue // still served by shard, which does not answer
		}
		if retry {
			continue // a follower still waits for its subscription
		}
		r.mu.Lock()
		if again := r.recovering[shard]; !again || r.closed {
			delete(r.recovering, shard)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// reconnect reconnects h, a shard's hub, for at most followTimeout: the dial
// of a primary that hangs may wait as long as its context lasts (the
// server takes the connection and never answers the handshake, and a client
// without read timeouts waits for it), and recover must go on to learn the
// slot map again, which names the replica that a failover promoted. A dial
// cut short so goes on in the hub until it ends or the router closes.
func (r *Router) reconnect(h *Hub) error {
	ctx, cancel := context.WithTimeout(r.ctx, followTimeout)
	defer cancel()
	return h.Reconnect(ctx)
}

// rehome subscribes the followers at shard whose channels the route now
// gives to another shard there, and those at shard that a move before left
// without a subscription (their attach failed), wherever the route gives
// them. It reports whether some followers subscribed at shard stay there
// (stay: shard's hub must be reconnected), and whether it must run again
// (retry: the route could not be read, or an attach failed; a follower
// whose attach failed is kept at shard, without a subscription, for the
// next run).
func (r *Router) rehome(shard string) (stay, retry bool) {
	r.mu.Lock()
	at := make(map[string][]*follower)
	for channel, fs := range r.followers {
		for f := range fs {
			if f.hub == shard && !f.attaching && !f.done {
				at[channel] = append(at[channel], f)
			}
		}
	}
	r.mu.Unlock()
	// One time box for the routes of the run: a route that reads the slot
	// map may wait on the network for each channel when the map cannot be
	// read at all.
	rctx, cancel := context.WithTimeout(r.ctx, followTimeout)
	defer cancel()
	for channel, fs := range at {
		to, _, err := r.route(rctx, channel)
		if err != nil {
			// The map cannot be read now, or not for this channel:
			// the next run tries it again, and the shard's hub is
			// reconnected meanwhile in case it still serves it. The
			// other channels are not held up behind it, unless the
			// run's time for routes is over.
			stay, retry = true, true
			if rctx.Err() != nil {
				return stay, retry
			}
			continue
		}
		for _, f := range fs {
			r.mu.Lock()
			if f.hub != shard || f.attaching || f.done {
				r.mu.Unlock()
				continue // moved or canceled meanwhile
			}
			if to == shard && f.cancel != nil {
				r.mu.Unlock()
				stay = true // subscribed there: the hub's reconnection serves it
				continue
			}
			cancel := f.cancel
			f.hub, f.cancel = "", nil
			r.mu.Unlock()
			if cancel != nil {
				cancel() // leaves the old hub
			}
			ctx, stop := context.WithTimeout(r.ctx, followTimeout)
			err := r.attach(ctx, channel, f)
			stop()
			if err != nil {
				r.mu.Lock()
				if f.hub == "" && !f.attaching && !f.done {
					f.hub = shard // without a subscription: the next run attaches it
				}
				r.mu.Unlock()
				retry = true
			}
		}
	}
	return stay, retry
}

// markClosed marks the router closed, so that Subscribe calls from now on
// return [driver.ErrClosed], and returns the hubs it has.
func (r *Router) markClosed() []*Hub {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return slices.Collect(maps.Values(r.hubs))
}

// Closing is Hub.Closing for every hub: Subscribe calls still waiting, and
// later ones, return [driver.ErrClosed], whatever happens to the
// connections meanwhile.
func (r *Router) Closing() {
	for _, h := range r.markClosed() {
		h.Closing()
	}
}

// Close closes every hub and waits for the followings in flight. Subscribe
// calls after it return [driver.ErrClosed].
func (r *Router) Close() {
	hubs := r.markClosed()
	r.cancel()
	for _, h := range hubs {
		h.Close()
	}
	r.wg.Wait()
}
