package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
)

// Errors a node returns.
var (
	// ErrDown is returned by every call while the store is down (SetDown).
	ErrDown = errors.New("memory: node is down")
	// ErrReplyLost is returned, after the command was applied, while the store
	// loses replies (SetLoseReplies).
	ErrReplyLost = errors.New("memory: reply lost")
	// errInvalidTTL is SetNX's error for a TTL of zero or less, which Redis
	// refuses too (SET NX PX 0: "invalid expire time").
	errInvalidTTL = errors.New("memory: invalid expire time: a TTL must be positive")
)

// store holds the keys that the Nodes opened under one address share.
type store struct {
	name  string
	clock Clock

	mu          sync.Mutex
	keys        map[string]entry
	fences      map[string]uint64                     // fencing counters; never expire
	subs        map[string]map[*subscription]struct{} // release subscribers by key
	down        bool
	loseReplies bool
	latency     time.Duration
	stalled     chan struct{} // non-nil while stalled; closed on resume
}

type entry struct {
	value   string
	expires time.Time
}

// Node is an in-process driver.Node. Its fault controls act on its store, so
// they affect every Node opened under the same address.
type Node struct {
	s     *store
	state drivernode.State // closed
}

var _ driver.Node = (*Node)(nil)

// An Option configures New.
type Option func(*store)

// WithClock makes the node expire keys and wait by c (default RealClock).
func WithClock(c Clock) Option { return func(s *store) { s.clock = c } }

// WithName sets the name the node gives in errors and String (default
// "memory-N", N counting the nodes New made).
func WithName(name string) Option { return func(s *store) { s.name = name } }

// unnamed names the stores New made without WithName.
var unnamed = drivernode.NewCounter("memory")

// New returns a node with keys of its own.
func New(opts ...Option) *Node {
	s := &store{
		name:  unnamed.Next().String(),
		clock: RealClock{},
		keys:  make(map[string]entry),
	}
	for _, o := range opts {
		o(s)
	}
	return &Node{s: s}
}

// String returns the node's name.
func (n *Node) String() string { return n.s.name }

// enter waits out the store's latency and stall, then checks for faults. It
// returns with s.mu held when err is nil.
func (n *Node) enter(ctx context.Context) error {
	if err := n.state.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s := n.s
	s.mu.Lock()
	lat, stalled := s.latency, s.stalled
	s.mu.Unlock()
	if err := waitResumed(ctx, stalled); err != nil {
		return err
	}
	if lat > 0 {
		if err := s.clock.Sleep(ctx, lat); err != nil {
			return err
		}
	}
	s.mu.Lock()
	// A stall that began during the latency holds the call too.
	for s.stalled != nil {
		stalled := s.stalled
		s.mu.Unlock()
		if err := waitResumed(ctx, stalled); err != nil {
			return err
		}
		s.mu.Lock()
	}
	if s.down {
		s.mu.Unlock()
		return ErrDown
	}
	return nil
}

// waitResumed waits until stalled is closed, unless it is nil, or ctx ends.
func waitResumed(ctx context.Context, stalled <-chan struct{}) error {
	if stalled == nil {
		return nil
	}
	select {
	case <-stalled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave releases s.mu and turns a reply into ErrReplyLost when the store loses
// replies.
func (n *Node) leave(ok bool) (bool, error) {
	lose := n.s.loseReplies
	n.s.mu.Unlock()
	if lose {
		return false, ErrReplyLost
	}
	return ok, nil
}

// get returns key's entry if it exists and has not expired. s.mu must be held.
func (s *store) get(key string) (entry, bool) {
	e, ok := s.keys[key]
	if ok && !s.clock.Now().Before(e.expires) {
		delete(s.keys, key)
		return entry{}, false
	}
	return e, ok
}

// validTTL returns errInvalidTTL, and releases s.mu, if ttl is not positive
// once in milliseconds. s.mu must be held.
func (n *Node) validTTL(ttl time.Duration) error {
	if driver.Milliseconds(ttl) <= 0 {
		n.s.mu.Unlock()
		return errInvalidTTL
	}
	return nil
}

func (s *store) expiry(ttl time.Duration) time.Time {
	return s.clock.Now().Add(time.Duration(driver.Milliseconds(ttl)) * time.Millisecond)
}

// SetNX sets key to value for ttl if key does not exist. A ttl of zero or
// less is an error, as it is to Redis.
func (n *Node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	if err := n.validTTL(ttl); err != nil {
		return false, err
	}
	s := n.s
	if _, held := s.get(key); held {
		return n.leave(false)
	}
	s.keys[key] = entry{value: value, expires: s.expiry(ttl)}
	return n.leave(true)
}

// EvalRelease deletes key if it holds value.
func (n *Node) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	s := n.s
	if e, ok := s.get(key); !ok || e.value != value {
		return n.leave(false)
	}
	delete(s.keys, key)
	return n.leave(true)
}

// Extend sets key's time to live to ttl if key holds value.
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.enter(ctx); err != nil {
		return false, err
	}
	s := n.s
	e, ok := s.get(key)
	if !ok || e.value != value {
		return n.leave(false)
	}
	e.expires = s.expiry(ttl)
	s.keys[key] = e
	return n.leave(true)
}

// Close closes this Node and ends its subscriptions; the store and other
// Nodes opened on it stay.
func (n *Node) Close() error {
	if n.s != nil {
		n.s.mu.Lock() // ReleaseNotify sends to no subscription of n after this
		defer n.s.mu.Unlock()
	}
	_, err := n.state.Close()
	return err
}

// SetDown makes every call fail with ErrDown (down true) or work again.
func (n *Node) SetDown(down bool) {
	n.s.mu.Lock()
	n.s.down = down
	n.s.mu.Unlock()
}

// SetStalled makes calls wait, like a server stopped with SIGSTOP: until the
// store is resumed with SetStalled(false), or their context ends, in which
// case they are not applied. Calls already in their latency (SetLatency) when
// the store stalls wait too, once the latency is over, as calls already sent
// to a stopped server wait in its socket.
func (n *Node) SetStalled(stalled bool) {
	s := n.s
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case stalled && s.stalled == nil:
		s.stalled = make(chan struct{})
	case !stalled && s.stalled != nil:
		close(s.stalled)
		s.stalled = nil
	}
}

// SetLoseReplies makes calls apply their command and then fail with
// ErrReplyLost, as when a reply is lost on the network.
func (n *Node) SetLoseReplies(lose bool) {
	n.s.mu.Lock()
	n.s.loseReplies = lose
	n.s.mu.Unlock()
}

// SetLatency makes each call wait d on the node's clock before it is applied.
// With a FakeClock the wait advances the clock instead of taking real time.
func (n *Node) SetLatency(d time.Duration) {
	n.s.mu.Lock()
	n.s.latency = d
	n.s.mu.Unlock()
}

// Forget drops every key and fencing counter, as a server restarted without persistence does.
func (n *Node) Forget() {
	n.s.mu.Lock()
	clear(n.s.keys)
	clear(n.s.fences)
	n.s.mu.Unlock()
}

// Delete drops key, as when it expires early (a clock jump on the server) or
// is evicted. It reports whether the key existed.
func (n *Node) Delete(key string) bool {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	_, ok := n.s.get(key)
	delete(n.s.keys, key)
	return ok
}

// PTTL returns key's remaining time to live, and false if the key does not exist.
func (n *Node) PTTL(key string) (time.Duration, bool) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	e, ok := n.s.get(key)
	if !ok {
		return 0, false
	}
	return e.expires.Sub(n.s.clock.Now()), true
}

// Holds reports whether key exists, without revealing its value.
func (n *Node) Holds(key string) bool {
	_, ok := n.PTTL(key)
	return ok
}
