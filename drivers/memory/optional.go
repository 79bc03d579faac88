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
	if err := n.enter(ctx); err != nil {
		return false, 0, err
	}
	if err := n.validTTL(ttl); err != nil {
		return false, 0, err
	}
	s := n.s
	counter := s.fences[fenceKey]
	_, held := s.get(key)
	if !held {
		s.keys[key] = entry{value: value, expires: s.expiry(ttl)}
	}
	ok, err := n.leave(!held)
	if err != nil {
		return false, 0, err
	}
	return ok, counter, nil
}

// RaiseFence raises the counter at fenceKey to token if key holds value.
func (n *Node) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	s := n.s
	if e, ok := s.get(key); !ok || e.value != value {
		return n.leave(false)
	}
	if s.fences == nil {
		s.fences = make(map[string]uint64)
	}
	s.fences[fenceKey] = max(s.fences[fenceKey], token)
	return n.leave(true)
}

// Fence returns the fencing counter at fenceKey, for tests.
func (n *Node) Fence(fenceKey string) uint64 {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	return n.s.fences[fenceKey]
}

// TTL returns key's remaining time to live, rounded down to the millisecond
// as Redis' PTTL is, if key holds value.
func (n *Node) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	if err := n.enter(ctx); err != nil {
		return 0, false, err
	}
	s := n.s
	e, ok := s.get(key)
	if !ok || e.value != value {
		_, err := n.leave(false)
		return 0, false, err
	}
	left := e.expires.Sub(s.clock.Now()).Truncate(time.Millisecond)
	ok, err := n.leave(true)
	if err != nil {
		return 0, false, err
	}
	return left, ok, nil
}

// ReleaseNotify is EvalRelease that also notifies the key's subscribers.
func (n *Node) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	s := n.s
	if e, ok := s.get(key); !ok || e.value != value {
		return n.leave(false)
	}
	delete(s.keys, key)
	for sub := range s.subs[key] {
		if sub.node.state.Err() != nil {
			continue // closed: its connection would be gone
		}
		select {
		case sub.notify <- struct{}{}:
		default:
		}
	}
	return n.leave(true)
}

type subscription struct {
	node   *Node // that subscribed
	notify chan<- struct{}
}

// Subscribe sends on notify each time a release of key is published, until
// cancel is called or the Node is closed.
func (n *Node) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := n.enter(ctx); err != nil {
		return nil, err
	}
	s := n.s
	sub := &subscription{node: n, notify: notify}
	if s.subs == nil {
		s.subs = make(map[string]map[*subscription]struct{})
	}
	if s.subs[key] == nil {
		s.subs[key] = make(map[*subscription]struct{})
	}
	s.subs[key][sub] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs[key], sub)
		if len(s.subs[key]) == 0 {
			delete(s.subs, key)
		}
	}, nil
}
