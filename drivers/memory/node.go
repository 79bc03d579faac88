package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// Errors a node returns.
var (
	// ErrDown is returned by every call while the store is down (SetDown),
	// and by every call through a Node whose connection is down
	// (SetConnDown).
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
	stalled     bool
	held        []func() // the calls that reached the store while stalled, in order; applied on resume
}

type entry struct {
	value string
	// expires is the key's expiry time as Redis keeps it: a whole
	// millisecond (see msOf), the last one in which the key still exists.
	expires time.Time
}

// msOf is t truncated to the millisecond: Redis keeps its clock (mstime) and
// expiry times in whole milliseconds.
func msOf(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// Node is an in-process driver.Node. Its fault controls act on its store, so
// they affect every Node opened under the same address and every Conn,
// except SetConnDown and SetConnStalled, which act on this Node (this
// connection) only. Make one with New, or Open for nodes that share keys;
// the zero Node is usable too, as a node with keys of its own, named as by
// New, made at its first use.
type Node struct {
	s     *store
	once  sync.Once        // makes s for a zero Node (see store)
	state drivernode.State // closed

	// This connection's own faults (SetConnDown, SetConnStalled), guarded
	// by the store's mu.
	connDown    bool
	connStalled bool
	connHeld    []func() // the calls sent while the connection was stalled, in order; sent on resume
}

// store returns n's store, making it the first time for a zero Node.
func (n *Node) store() *store {
	n.once.Do(func() {
		if n.s == nil {
			n.s = newStore(nil)
		}
	})
	return n.s
}

var _ driver.Node = (*Node)(nil)

// An Option configures New.
type Option func(*store)

// WithClock makes the node expire keys and wait by c (default RealClock; a
// nil c keeps the default).
func WithClock(c Clock) Option {
	return func(s *store) {
		if c != nil {
			s.clock = c
		}
	}
}

// WithName sets the name the node gives in errors and String (default
// "memory-N", N counting the nodes New made). A name written as an address
// with credentials ("redis://user:password@host:port", as a test may open
// the addresses of its configuration) is shown with its password replaced
// by "xxxxx", as the Redis drivers show their addresses.
func WithName(name string) Option { return func(s *store) { s.name = name } }

// unnamed names the stores New made without WithName.
var unnamed = drivernode.NewCounter("memory")

// New returns a node with keys of its own. A nil Option is skipped.
func New(opts ...Option) *Node { return &Node{s: newStore(opts)} }

// newStore returns a store with the options of New applied.
func newStore(opts []Option) *store {
	s := &store{
		name:  unnamed.Next().String(),
		clock: RealClock{},
		keys:  make(map[string]entry),
	}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	// A password, in user information or a query: what every driver's
	// String must leave out.
	s.name = redisaddr.MaskName(s.name)
	return s
}

// Conn returns another Node on n's store, as another connection to the same
// server: it shares n's keys, fencing counters, release subscribers and the
// store's fault controls, and has its own Close, which closes neither n nor
// the store, and its own connection's faults (SetConnDown, SetConnStalled),
// which cut it off while the others still reach the store. In a
// test, give each Client over nodes from New its own Conns, since a Client
// closes its nodes: the Clients then contend as processes would, over keys that
// belong to the test (unlike Open's, which last as long as the process).
func (n *Node) Conn() *Node { return &Node{s: n.store()} }

// String returns the node's name.
func (n *Node) String() string { return n.store().name }

// call runs op on n's store, under s.mu, once the store's latency and the
// stall of n's connection and of the store are over, and returns its result,
// turned into ErrDown while n's connection or the store is down and into
// ErrReplyLost (after op ran) while the store loses replies. A call whose
// context ends in its latency is never applied, as a command lost on its
// way. A call sent on a stalled connection is held, as a command that a
// partition keeps from the server: when the connection resumes, the store
// applies the calls it held in the order they came (or holds them in turn,
// if stalled itself). A call that reaches a stalled store is held, as a
// command in the socket of a stopped server: the store applies the calls it
// holds when it resumes, in the order they came. Held calls are applied
// including those whose callers stopped waiting when their context ended
// (unless late is false: then such a call is dropped, as a subscription on
// a connection its caller gave up).
func call[T any](n *Node, ctx context.Context, late bool, op func(s *store) (T, error)) (T, error) {
	var zero T
	if err := n.state.Err(); err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	s := n.store()
	s.mu.Lock()
	lat := s.latency
	s.mu.Unlock()
	if lat > 0 {
		if err := s.clock.Sleep(ctx, lat); err != nil {
			return zero, err
		}
	}
	s.mu.Lock()
	if n.connDown {
		s.mu.Unlock()
		return zero, ErrDown
	}
	if !n.connStalled && !s.stalled {
		defer s.mu.Unlock()
		return run(s, op)
	}
	h := &heldCall[T]{done: make(chan struct{})}
	apply := func() {
		defer close(h.done)
		if !h.gone {
			h.v, h.err = run(s, op)
		}
	}
	if n.connStalled {
		// Held on the connection; once it resumes, the store applies it
		// at once or, stalled itself, holds it in turn.
		n.connHeld = append(n.connHeld, func() {
			if s.stalled {
				s.held = append(s.held, apply)
			} else {
				apply()
			}
		})
	} else {
		s.held = append(s.held, apply)
	}
	s.mu.Unlock()
	select {
	case <-h.done:
		return h.v, h.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-h.done: // applied as ctx ended: its reply is the caller's
		return h.v, h.err
	default:
	}
	h.gone = !late
	return zero, ctx.Err()
}

// A heldCall is a call that a stalled store or connection holds until it
// resumes.
type heldCall[T any] struct {
	done chan struct{} // closed once the store has applied (or dropped) it
	gone bool          // its caller stopped waiting, and it is not to be applied late; guarded by s.mu
	v    T
	err  error
}

// run runs op on s, which is not stalled, checking for faults. s.mu must be
// held.
func run[T any](s *store, op func(s *store) (T, error)) (T, error) {
	var zero T
	if s.down {
		return zero, ErrDown
	}
	v, err := op(s)
	if err != nil {
		return zero, err
	}
	if s.loseReplies {
		return zero, ErrReplyLost
	}
	return v, nil
}

// get returns key's entry if it exists and has not expired. As in Redis
// (keyIsExpired: now > when, in milliseconds), a key expires once the
// millisecond of its expiry time has passed: a key set with PX 100 at t is
// still there at t+100ms and gone 1ms later. s.mu must be held.
func (s *store) get(key string) (entry, bool) {
	e, ok := s.keys[key]
	if ok && msOf(s.clock.Now()).After(e.expires) {
		delete(s.keys, key)
		return entry{}, false
	}
	return e, ok
}

// validTTL returns errInvalidTTL if ttl is not positive once in
// milliseconds.
func validTTL(ttl time.Duration) error {
	if driver.Milliseconds(ttl) <= 0 {
		return errInvalidTTL
	}
	return nil
}

// expiry returns the expiry time of a key given ttl now: as Redis computes
// it for SET PX and PEXPIRE, the current millisecond plus ttl in
// milliseconds.
func (s *store) expiry(ttl time.Duration) time.Time {
	return msOf(s.clock.Now()).Add(time.Duration(driver.Milliseconds(ttl)) * time.Millisecond)
}

// SetNX sets key to value for ttl if key does not exist. A ttl of zero or
// less is an error, as it is to Redis.
func (n *Node) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return call(n, ctx, true, func(s *store) (bool, error) {
		if err := validTTL(ttl); err != nil {
			return false, err
		}
		if _, held := s.get(key); held {
			return false, nil
		}
		s.keys[key] = entry{value: value, expires: s.expiry(ttl)}
		return true, nil
	})
}

// EvalRelease deletes key if it holds value.
func (n *Node) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return call(n, ctx, true, func(s *store) (bool, error) { return s.release(key, value), nil })
}

// release deletes key if it holds value, and reports whether it did. s.mu
// must be held.
func (s *store) release(key, value string) bool {
	if e, ok := s.get(key); !ok || e.value != value {
		return false
	}
	delete(s.keys, key)
	return true
}

// Extend sets key's time to live to ttl if key holds value.
func (n *Node) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return call(n, ctx, true, func(s *store) (bool, error) {
		e, ok := s.get(key)
		if !ok || e.value != value {
			return false, nil
		}
		e.expires = s.expiry(ttl)
		s.keys[key] = e
		return true, nil
	})
}

// Close closes this Node and ends its subscriptions; the store and other
// Nodes opened on it stay.
func (n *Node) Close() error {
	s := n.store()
	s.mu.Lock() // ReleaseNotify sends to no subscription of n after this
	defer s.mu.Unlock()
	_, err := n.state.Close()
	return err
}

// SetDown makes every call fail with ErrDown (down true) or work again.
// Subscriptions survive it, and each is sent one notice when the node is
// back (see Subscribe).
func (n *Node) SetDown(down bool) {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down && !down {
		s.down = false
		s.wakeAll(nil)
	}
	s.down = down
}

// SetStalled makes the store hold the calls that reach it, like a server
// stopped with SIGSTOP, until it is resumed with SetStalled(false), which
// applies them in the order they came, as a resumed server reads the
// commands waiting in its sockets. A caller waits for its call's reply, or
// until its context ends: the call is then applied all the same when the
// store resumes, so that, say, a SetNX whose caller gave up sets the key
// (Subscribe is the exception: a subscription whose caller gave up is
// dropped). Calls in their latency (SetLatency) when the store stalls are
// held too, once the latency is over.
func (n *Node) SetStalled(stalled bool) {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	setStalled(&s.stalled, &s.held, stalled)
}

// setStalled sets *flag to stalled and, on a resume, runs the calls in *held
// in order and empties it. The store's mu must be held.
func setStalled(flag *bool, held *[]func(), stalled bool) {
	was := *flag
	*flag = stalled
	if was && !stalled {
		calls := *held
		*held = nil
		for _, c := range calls {
			c()
		}
	}
}

// SetConnDown makes every call through this Node (this connection) fail
// with ErrDown, unapplied, or work again, as a connection refused or reset
// by a partition between one client and the server; the store and its other
// Nodes (Conn) are unaffected: the keys stay, and other connections still
// reach them. While down, a subscription made through this Node receives no
// release; each is sent one notice when it is back, unless the store is
// down (see Subscribe). Unlike SetDown, it acts on this Node only.
func (n *Node) SetConnDown(down bool) {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.connDown && !down {
		n.connDown = false
		if !s.down {
			s.wakeAll(n)
		}
	}
	n.connDown = down
}

// SetConnStalled makes this Node (this connection) hold the calls sent
// through it, as a partition that drops one client's packets does, until it
// is resumed with SetConnStalled(false); the store and its other Nodes
// (Conn) are unaffected. A caller waits for its call's reply, or until its
// context ends (its node timeout, for a Client). On resume the store applies
// the held calls in the order they came, those whose callers gave up
// included and even if the Node was closed meanwhile, as TCP delivers what
// it retransmitted once the partition heals (Subscribe is the exception, as
// for SetStalled); a stalled store holds them in turn. While stalled, a
// subscription made through this Node receives no release. Unlike
// SetStalled, it acts on this Node only.
func (n *Node) SetConnStalled(stalled bool) {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	setStalled(&n.connStalled, &n.connHeld, stalled)
}

// SetLoseReplies makes calls apply their command and then fail with
// ErrReplyLost, as when a reply is lost on the network.
func (n *Node) SetLoseReplies(lose bool) {
	s := n.store()
	s.mu.Lock()
	s.loseReplies = lose
	s.mu.Unlock()
}

// SetLatency makes each call wait d on the node's clock before it is applied.
// With a FakeClock the wait advances the clock instead of taking real time,
// by d for every call, one after the other, concurrent calls included: on
// a FakeClock that several nodes share, a Client's round over three nodes
// moves it 3d, not d, and a key set early in the round has lost up to 2d of
// its TTL by its end (TTL 250ms, d 100ms: PTTLs such as 150, 250 and 50ms,
// as the calls interleave).
// That is no slow network, whose delays overlap; for one, run the test in a
// testing/synctest bubble on the RealClock, where the waits are virtual
// and overlap.
func (n *Node) SetLatency(d time.Duration) {
	s := n.store()
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// Forget drops every key and fencing counter, as a server restarted without
// persistence does. Subscriptions survive it, as the Redis drivers'
// survive a restart, and each is sent one notice (see Subscribe), unless
// the store is down: SetDown(false) sends it then.
func (n *Node) Forget() {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.keys)
	clear(s.fences)
	if !s.down {
		s.wakeAll(nil)
	}
}

// Delete drops key, as when it expires early (a clock jump on the server) or
// is evicted. It reports whether the key existed. key, as for PTTL and
// Holds, is the key on the node: with redlock.WithKeyPrefix, the prefix and
// the lock's name.
func (n *Node) Delete(key string) bool {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.get(key)
	delete(s.keys, key)
	return ok
}

// PTTL returns key's remaining time to live, and false if the key does not
// exist. As Redis' PTTL, it is in whole milliseconds: the expiry time less
// the current millisecond, 0 in the key's last millisecond.
func (n *Node) PTTL(key string) (time.Duration, bool) {
	s := n.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.get(key)
	if !ok {
		return 0, false
	}
	return e.expires.Sub(msOf(s.clock.Now())), true
}

// Holds reports whether key exists, without revealing its value.
func (n *Node) Holds(key string) bool {
	_, ok := n.PTTL(key)
	return ok
}
