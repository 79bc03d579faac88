package memory

import (
	"context"
	"time"

	"github.com/go-redlock/redlock/driver"
)

var (
	_ driver.Fencer   = (*Node)(nil)
	_ driver.Notifier = (*Node)(nil)
	_ driver.TTLer    = (*Node)(nil)
)

// SetNXFence is SetNX that also returns the fencing counter at fenceKey.
func (n *Node) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	type reply struct {
		ok      bool
		counter uint64
	}
	r, err := call(n, ctx, true, func(s *store) (reply, error) {
		if err := validTTL(ttl); err != nil {
			return reply{}, err
		}
		_, held := s.get(key)
		if !held {
			s.keys[key] = entry{value: value, expires: s.expiry(ttl)}
		}
		return reply{!held, s.fences[fenceKey]}, nil
	})
	return r.ok, r.counter, err
}

// RaiseFence raises the counter at fenceKey to token if key holds value.
func (n *Node) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	return call(n, ctx, true, func(s *store) (bool, error) {
		if e, ok := s.get(key); !ok || e.value != value {
			return false, nil
		}
		if s.fences == nil {
			s.fences = make(map[string]uint64)
		}
		s.fences[fenceKey] = max(s.fences[fenceKey], token)
		return true, nil
	})
}

// Fence returns the fencing counter at fenceKey, for tests. The counter of a
// lock's key is at driver.PrefixFenceKey(prefix, key), key being the key on
// the node (with redlock.WithKeyPrefix, prefix and the lock's name; without,
// prefix "" and the name: driver.FenceKey(key)); after a grant
// with redlock.WithFencing it is the lock's Token on at least a quorum of
// the nodes, until a later grant raises it.
func (n *Node) Fence(fenceKey string) uint64 {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fences[fenceKey]
}

// TTL returns key's remaining time to live in whole milliseconds, as Redis'
// PTTL does (see Node.PTTL), if key holds value.
func (n *Node) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	left, err := call(n, ctx, true, func(s *store) (time.Duration, error) {
		e, ok := s.get(key)
		if !ok || e.value != value {
			return -1, nil
		}
		return e.expires.Sub(msOf(s.clock.Now())), nil
	})
	if err != nil || left < 0 {
		return 0, false, err
	}
	return left, true, nil
}

// ReleaseNotify is EvalRelease that also notifies the key's subscribers.
func (n *Node) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return call(n, ctx, true, func(s *store) (bool, error) {
		if !s.release(key, value) {
			return false, nil
		}
		for sub := range s.subs[key] {
			sub.wake()
		}
		return true, nil
	})
}

// wake sends on sub's notify without blocking, unless the Node that
// subscribed is closed (its connection would be gone) or cut off
// (SetConnDown, SetConnStalled: the message does not reach it). The
// store's mu is held.
func (sub *subscription) wake() {
	if sub.node.state.Err() != nil || sub.node.connDown || sub.node.connStalled {
		return
	}
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// wakeAll wakes once every subscription on s, or only those made through
// through when it is not nil (see subscription.wake): what the Redis
// drivers' pub/sub does once it has subscribed again on a new connection
// after the old one broke (a server down or restarted, a connection reset),
// since a release may have been published while there was none. The
// store's mu is held.
func (s *store) wakeAll(through *Node) {
	for _, subs := range s.subs {
		for sub := range subs {
			if through == nil || sub.node == through {
				sub.wake()
			}
		}
	}
}

type subscription struct {
	node   *Node // that subscribed
	notify chan<- struct{}
}

// Subscribe sends on notify each time a release of key is published, until
// cancel is called or the Node is closed. A Subscribe that fails (the node
// down, its context ended, its reply lost) leaves no subscription behind.
// As the Redis drivers' subscriptions, one survives an outage of the node
// (SetDown, Forget, SetConnDown through the Node that subscribed): it
// hears nothing meanwhile, and is sent one notice when the node is back
// (SetDown(false), SetConnDown(false)) or has restarted (Forget), as those
// drivers send once they have subscribed again on a new connection, a
// release having possibly been published while there was none.
func (n *Node) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	sub := &subscription{node: n, notify: notify}
	s := n.store()
	_, err := call(n, ctx, false, func(s *store) (struct{}, error) {
		if s.loseReplies {
			// The confirmation is lost (call returns ErrReplyLost): the
			// caller gets no cancel, so the subscription must not be
			// made, as on a Redis connection that broke before the reply
			// and took its subscriptions with it.
			return struct{}{}, nil
		}
		if s.subs == nil {
			s.subs = make(map[string]map[*subscription]struct{})
		}
		if s.subs[key] == nil {
			s.subs[key] = make(map[*subscription]struct{})
		}
		s.subs[key][sub] = struct{}{}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs[key], sub)
		if len(s.subs[key]) == 0 {
			delete(s.subs, key)
		}
	}, nil
}
