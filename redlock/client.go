package redlock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// Client acquires locks over a fixed set of independent Redis masters. It is
// safe for concurrent use; create one with New or Open and share it. A nil or
// zero Client is not usable: its calls return an error that says so, and
// Quorum and TTL return 0.
type Client struct {
	nodes       []driver.Node
	names       []string // for NodeError: address without credentials
	quorum      int
	ttl         time.Duration
	drift       time.Duration
	nodeTimeout time.Duration
	// netTimeout carries only the node timeout as the network timeout
	// (driver.WithNetworkTimeout), made once: a round's context answers
	// that value from it, without a context and an allocation per round.
	netTimeout  context.Context
	driftFactor float64
	backoff     Backoff
	extendEvery time.Duration     // Do's extension interval
	extendSet   bool              // extendEvery was given, not derived from the TTL
	maxAttempts int               // Lock's cap on attempts; 0: none
	prefix      string            // before every key on the nodes
	fencers     []driver.Fencer   // nil unless WithFencing
	notifiers   []driver.Notifier // nil entries for nodes without notifications
	// chanNotifiers are the notifiers that take the release channel from
	// the caller; chanNotify is set when there is one.
	chanNotifiers []drivernode.ChannelNotifier
	chanNotify    bool
	notify        bool             // some node is a Notifier
	now           func() time.Time // time.Now, replaced in simulation tests
	realClock     bool             // now is time.Now
	closed        atomic.Bool
	obs           Observer // nil unless WithObserver or WithLogger
	obsStops      []func() // of the observers that watch the Client (ClientObserver), for Close

	turnsMu   sync.Mutex
	turns     map[string]*turn         // Lock's waiters, by key
	acquiring map[string]chan struct{} // keys with a TryLock in flight, with the channel endAcquire closes (nil until acquireEnded makes it); guarded by turnsMu

	workers *workers // run the node calls

	// slots admits the rounds of TryLock: at most maxRounds at once, the
	// others wait their turn, so that thousands of calls at once queue
	// here, parked, instead of all waking at each reply and starving the
	// goroutines that read the replies. releases does the same for Unlock's
	// rounds, apart: a release, which the acquisitions queued may be
	// waiting for, never waits behind them.
	slots    chan struct{}
	releases chan struct{}
	// admitMu guards admitQ, the attempts that wait for a slot, in the
	// order they came (see admitDo and admit): a slot given back goes to
	// the first of them.
	admitMu sync.Mutex
	admitQ  []*doCall

	keeperOnce sync.Once
	keeper     *keeper   // extends Do's locks; made by keeperOf
	queuers    []bool    // by node: it queues commands under load (driver.Queuer)
	queued     bool      // some node is a driver.Queuer
	unqueued   bool      // some node is not
	direct     bool      // one node, no observers: calls without rounds (see loneCall)
	inflight   *tracker  // node calls and background work in flight, which Close waits for
	running    *tracker  // background goroutines, which Close waits for after it ended them
	cleaners   []cleaner // by node: the releases repeated there
	quit       context.Context
	stopAll    context.CancelFunc // ends quit: Close, after its wait
	closing    chan struct{}      // closed when Close begins: wakes the waiters in Lock

	identities identities // nodes that are one server under two addresses
}

// New returns a Client over nodes, which must be independent masters: never a
// primary and its replicas. The quorum is len(nodes)/2+1. An odd count is
// best: an even count N tolerates no more failed nodes than N-1 does. A node
// given twice (the same value, or the same name from fmt.Stringer) is an
// error, since it would count twice towards the quorum. Nodes that are one
// server or one Redis Cluster under different addresses are found at first
// use, when they implement driver.Identifier (as the Redis drivers do):
// TryLock, Lock and Do then fail with an error that names them. The first
// acquisition waits for the identities of the nodes that answered it, and,
// for at most as long as its SET round took (10ms at least), for the others:
// a node that is down or stalled does not hold it up for the node timeout.
// Such a node is asked again every second, and a duplicate found when it
// answers fails the acquisitions from then on. Connect asks the questions
// before the first acquisition, bounded by its context rather than the node
// timeout: the acquisitions then ask only the nodes that did not tell it
// their identity.
//
// The Client owns the nodes: Close closes them. When New returns an error
// (no nodes, more than MaxNodes, a nil, zero or repeated node, a bad option, or
// WithFencing over a node that is not a driver.Fencer), it has closed none of
// them: they are still the caller's to close.
func New(nodes []driver.Node, opts ...Option) (*Client, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.tls != nil {
		return nil, errors.New("redlock: WithTLSConfig applies to Open; give New nodes whose clients use TLS")
	}
	return newClient(nodes, cfg)
}

func newClient(nodes []driver.Node, cfg config) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("redlock: no nodes")
	}
	if len(nodes) > MaxNodes {
		return nil, fmt.Errorf("redlock: %d nodes are more than %d", len(nodes), MaxNodes)
	}
	names := make([]string, len(nodes))
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
		switch {
		case n == nil:
			return nil, fmt.Errorf("redlock: node %d is nil", i+1)
		case nilValue(n):
			return nil, fmt.Errorf("redlock: node %d is a nil %T", i+1, n)
		}
		names[i] = fmt.Sprintf("#%d", i+1)
		name, err := nodeName(n)
		if err != nil {
			return nil, fmt.Errorf("redlock: node %d (%T): %w", i+1, n, err)
		}
		if name != "" {
			// Compared as given: masked names can be alike where the
			// names differ (an '@' in a Unix socket's path is Redact's).
			names[i] = redisaddr.MaskName(name)
			if j, dup := seen[name]; dup {
				return nil, fmt.Errorf("redlock: nodes %d and %d are both %s: a node must be given once", j+1, i+1, names[i])
			}
			seen[name] = i
		}
		for j := range i {
			if sameNode(nodes[j], n) {
				return nil, fmt.Errorf("redlock: nodes %d and %d are the same node: a node must be given once", j+1, i+1)
			}
		}
	}
	c := &Client{
		nodes:         nodes,
		names:         names,
		quorum:        len(nodes)/2 + 1,
		ttl:           cfg.ttl,
		drift:         drift(cfg.ttl, cfg.driftFactor),
		nodeTimeout:   cfg.nodeTimeout,
		netTimeout:    driver.WithNetworkTimeout(context.Background(), cfg.nodeTimeout),
		driftFactor:   cfg.driftFactor,
		backoff:       cfg.backoff,
		extendEvery:   cfg.extendEvery,
		extendSet:     cfg.set&optExtend != 0,
		maxAttempts:   cfg.maxAttempts,
		prefix:        cfg.keyPrefix,
		notifiers:     make([]driver.Notifier, len(nodes)),
		chanNotifiers: make([]drivernode.ChannelNotifier, len(nodes)),
		now:           time.Now,
		realClock:     true,
		workers:       newWorkers(),
		slots:         make(chan struct{}, maxRounds),
		releases:      make(chan struct{}, maxRounds),
		inflight:      newTracker(),
		running:       newTracker(),
		cleaners:      make([]cleaner, len(nodes)),
		obs:           observerOf(cfg.observers),
	}
	c.quit, c.stopAll = context.WithCancel(context.Background())
	c.closing = make(chan struct{})
	c.queuers = make([]bool, len(nodes))
	for i, n := range nodes {
		if nn, ok := n.(driver.Notifier); ok {
			c.notifiers[i], c.notify = nn, true
			if cn, ok := n.(drivernode.ChannelNotifier); ok {
				c.chanNotifiers[i], c.chanNotify = cn, true
			}
		}
		if _, ok := n.(driver.Queuer); ok {
			c.queuers[i], c.queued = true, true
		} else {
			c.unqueued = true
		}
	}
	if cfg.fencing {
		c.fencers = make([]driver.Fencer, len(nodes))
		for i, n := range nodes {
			f, ok := n.(driver.Fencer)
			if !ok {
				return nil, fmt.Errorf("redlock: WithFencing: node %s (%T) does not keep fencing counters (driver.Fencer)", names[i], n)
			}
			c.fencers[i] = f
		}
	}
	c.direct = len(nodes) == 1 && c.obs == nil
	c.observeClient(cfg.observers)
	return c, nil
}

// maxRounds is how many rounds of TryLock, and how many of Unlock, a Client
// runs at once.
const maxRounds = 512

// sameNode reports whether a and b are one value: the same pointer, or equal
// values of a comparable type. A type that is comparable may still hold a
// value that is not (a struct with an interface field holding a slice), whose
// comparison panics: such nodes are not the same.
func sameNode(a, b driver.Node) (same bool) {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// nilValue reports whether x is nil, or holds a nil pointer, map, function,
// channel or slice.
func nilValue(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// nodeName is n's String, or "" when n has none; an error when String
// panics, as a zero value's may. What shows it masks any password in it
// (redisaddr.MaskName: a driver of another module may name a node by its
// address as given).
func nodeName(n driver.Node) (name string, err error) {
	s, ok := n.(fmt.Stringer)
	if !ok {
		return "", nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("its String method panicked (%v): a node must be made by its driver", v)
		}
	}()
	return s.String(), nil
}

// Quorum returns how many nodes must agree: len(nodes)/2+1.
func (c *Client) Quorum() int {
	if c == nil {
		return 0
	}
	return c.quorum
}

// TTL returns the time to live of new locks: WithTTL's given to New or Open,
// or DefaultTTL. A TryLock, Lock or Do given WithTTL uses its own instead.
func (c *Client) TTL() time.Duration {
	if c == nil {
		return 0
	}
	return c.ttl
}

// NodeTimeout returns how long each node call may take on the network
// before the node counts as failed: WithNodeTimeout's, or by default the
// TTL/10, at most MaxNodeTimeout.
func (c *Client) NodeTimeout() time.Duration {
	if c == nil {
		return 0
	}
	return c.nodeTimeout
}

// unmade reports whether c was not made by New or Open: a nil or zero
// Client, whose calls return errUnmade.
func (c *Client) unmade() bool { return c == nil || c.closing == nil }

// errUnmade is returned by the calls of a Client that New or Open did not make.
var errUnmade = errors.New("redlock: a nil or zero Client: make one with New or Open")

// badInput returns err, the error of a call given bad input (a nil or zero
// Client, a bad option, a nil function), with ctx.Err() joined when ctx (not
// nil) had ended: the context's end is part of every call's error. It is
// kept out of line, as Do's other helpers are, so that Do's frame, which
// stays beneath fn's for as long as fn runs, does not grow with it.
//
//go:noinline
func badInput(ctx context.Context, err error) error {
	if ctx != nil {
		if cerr := ctx.Err(); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	return err
}

// Close stops the observers that watch the Client (ClientObserver), then
// waits, for at most the node timeout, for the calls and releases in
// flight (those that Unlock left to finish in the background, those of
// failed attempts, and the questions of which server each node is
// (driver.Identifier), so that the observers hear of one refused after the
// lock was released, included), then ends what is left (the repeated releases
// of keys whose SET had an unknown outcome among them, which it does not
// wait for between two tries), waits for that, bounded by the node timeout
// too, releases the locks of Do (below), and closes every node. Locks of
// TryLock and Lock still held expire after their TTL.
//
// Do's still running have their function's context canceled with
// ErrLockLost as its cause once the first wait is over (so at most the node
// timeout after Close began), since nothing extends their locks after it.
// Close then releases the locks of the Do's whose function has not returned,
// as Do would (Do returns that release's account once its function returns;
// Close does not wait for the function, which may ignore its context), from
// at most 512 goroutines however many the Do's are, as many as the releases
// of a Client that run at once (see Lock.Unlock). It
// waits for those releases and for those of the Do's whose function
// returned before, for at most the node timeout, then for at most the node
// timeout more for the node calls still in flight (those that the
// releases' quorums left running, and any that outlived the first wait): so
// no release of Do meets a closed node, and none of the Client's goroutines
// is still at work when Close returns, unless the releases did not all end
// within those bounds: a node did not answer in time, or the Do's were so
// many that their releases, at most 512 at a time (see Lock.Unlock), each a
// round trip, took longer (thousands of Do's over nodes 40ms away with a
// node timeout of 100ms, say). Such a release then meets a closing node,
// and its Do's error says so. A Do
// granted its lock only after that (its acquisition was in flight) does not
// release it: its error matches ErrLockLost and ErrClosed, and the key
// expires after its TTL.
//
// Calls on a closed Client return ErrClosed, and so do the Locks that wait
// between attempts, and Connect, when Close begins, at once (Connect's
// questions are cut then, not waited for). Close returns the nodes'
// errors from closing them (each a *NodeError), joined. Only the first call
// closes: a later one returns nil at once, without waiting for the first to
// finish. An observer that panics in one of Close's releases has its panic
// go on from Close, once the nodes are closed.
func (c *Client) Close() error {
	if c.unmade() {
		return errUnmade
	}
	if c.closed.Swap(true) {
		return nil
	}
	close(c.closing)
	// An observer's stop that panics (or calls runtime.Goexit) neither
	// keeps the others from being stopped nor leaves the Client half
	// closed: the rest of Close runs, and then the panic goes on.
	stopped := false
	defer func() {
		if !stopped {
			c.shutdown()
		}
	}()
	stopObservers(c.obsStops)
	stopped = true
	return c.shutdown()
}

// stopObservers calls every stop, in order, also when one of them panics
// or calls runtime.Goexit (which then goes on).
func stopObservers(stops []func()) {
	if len(stops) == 0 {
		return
	}
	defer stopObservers(stops[1:])
	stops[0]()
}

// shutdown is Close once its observers are stopped.
func (c *Client) shutdown() error {
	c.inflight.wait(c.nodeTimeout)
	c.stopAll()
	// Through keeperOf, which a first Do may be running: a keeper made
	// after this is born stopped.
	c.keeperOf().stop()
	// What is left was told to end: its calls return at once, or at
	// their node timeout at the latest.
	c.running.wait(c.nodeTimeout)
	pv, unwound := c.keeperOf().releaseHeld(c.nodeTimeout)
	if unwound && pv != nil {
		// An observer's panic in a release of Do's lock, on one of
		// Close's goroutines: it goes on here, once the nodes are closed.
		defer panic(pv)
	}
	c.workers.close()
	// All at once: a node's Close may wait for a server that does not
	// answer.
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			if err := n.Close(); err != nil {
				errs[i] = &NodeError{Addr: c.names[i], Err: err}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Client) checkKey(key string) error {
	switch {
	case c.closed.Load():
		return ErrClosed
	case key == "":
		return errors.New("redlock: empty key")
	case len(c.prefix)+len(key) > MaxKeyLen:
		return fmt.Errorf("redlock: key of %d bytes (%d with the prefix) is longer than %d", len(key), len(c.prefix)+len(key), MaxKeyLen)
	}
	return nil
}

// TryLock makes one attempt to acquire the lock named key. It returns a Lock
// when a quorum of nodes granted it with validity left, and otherwise an error
// matching ErrNotObtained with the per-node causes and the votes (*VoteError)
// joined in. By then the release of the key was sent to every node but those
// that refused it (a refusal is definite: the key there is another's), and
// confirmed by those that had granted it; a node whose outcome is unknown (it
// failed, or had not answered) gets the release again in the background until
// it answers, for at most a TTL after its outcome became unknown, or until
// Close. When so many nodes failed that no quorum was possible, the error
// matches ErrUnavailable too. An attempt that failed with an error retrying
// cannot fix among its replies (NOPERM, say: see Lock) waits for the nodes
// that had not answered, for up to twice the node timeout, when they could
// make such errors more than len(nodes)-Quorum, so that its *VoteError
// counts them (Permanent) and its error says whether retrying can help;
// one that failed with a node's failure (an error, a timeout) among its
// replies waits so when they could make failures more than
// len(nodes)-Quorum (ErrUnavailable), so that a key held elsewhere on the
// nodes that answer first does not hide nodes down or stalled. Bad input
// (an empty or too long key, a closed Client, an option TryLock does not
// take, a nil ctx) gives an error that does not match ErrNotObtained (with
// ctx.Err() joined when ctx had ended).
//
// Only one attempt per key is in flight in a Client at a time, so that
// concurrent callers never split the nodes' votes among themselves: a
// TryLock of a key that another TryLock of this Client is acquiring fails at
// once, without a network call, with an error matching ErrNotObtained.
//
// A Lock comes with whatever validity was left, however little: an attempt
// that took most of the TTL (slow nodes, within the node timeout) leaves its
// holder a moment. Look at Until before acting, and act only while it has
// not passed (Done closes then), or use Do; Lock's locks are the same.
//
// opts apply to this call only: WithTTL, which also changes the validity.
// With WithFencing, the lock also gets a fencing token: see Lock.Token.
//
// On a fresh Client, call Connect first: the nodes otherwise make their
// connections within this one attempt, which the node timeout bounds.
func (c *Client) TryLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	switch {
	case c.unmade():
		return nil, badInput(ctx, errUnmade)
	case ctx == nil:
		return nil, errNilContext
	}
	cc, err := c.callOptions("TryLock", tryLockOptions, opts)
	if err != nil {
		if cc.bad = badInput(ctx, err); c.obs == nil {
			return nil, cc.bad
		}
	}
	l, _, err := c.attempt(ctx, key, cc, 1, false)
	return l, err
}

// outcome says how an attempt that did not obtain the lock ended.
type outcome struct {
	finished  bool // the nodes' votes decided it; the context did not cut it short
	cut       bool // the context ended before any node call was sent
	permanent bool // too many nodes answered errors that retrying cannot fix
	// clearWake says that a quorum may grant the next attempt once the
	// releases this one left to the background (cc.left) are done (see
	// mayWin).
	clearWake bool
	// left counts the releases this attempt left to the background: cc.left,
	// or one made for the first failed attempt of a Lock (see
	// callConfig.waits); nil for TryLock.
	left *leftovers
	r    *round // the SET round, for the observers; nil when none was sent
	// had is the nodes where the caller's own key of an earlier attempt
	// may still have been set when this one began (see leftovers.nodes).
	had uint64
}

// tryLock makes one attempt. admitted says that the caller holds one of the
// Client's slots for it, which it gives back itself (see doCall.first);
// otherwise tryLock waits for one, and gives it back.
func (c *Client) tryLock(ctx context.Context, key string, cc callConfig, admitted bool) (*Lock, outcome, error) {
	if cc.bad != nil { // bad options, observed (see callConfig.bad)
		return nil, outcome{}, cc.bad
	}
	if err := c.checkKey(key); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = errors.Join(err, cerr) // the context's end is part of every call's error
		}
		return nil, outcome{}, err
	}
	if err := c.askIdentities(ctx); err != nil {
		return nil, outcome{}, badInput(ctx, err) // as bad input: retrying cannot fix it
	}
	if !admitted {
		// Before the key is marked as being acquired: thousands of
		// attempts waiting here mark nothing (a map never shrinks).
		// admit sends nothing once ctx has ended.
		if err := c.admit(ctx); err != nil {
			return nil, outcome{cut: true}, errors.Join(ErrNotObtained, err)
		}
		defer c.leave()
	} else if err := ctx.Err(); err != nil {
		// Sends nothing, as admit, also for a caller admitted already
		// (Do's first attempt): askIdentities asked no node (a round
		// granted now would skip the first round's check).
		return nil, outcome{cut: true}, errors.Join(ErrNotObtained, err)
	}
	if !c.beginAcquire(key) {
		return nil, outcome{}, errors.Join(ErrNotObtained, errAcquiring)
	}
	defer c.endAcquire(key)
	name := key
	key = c.prefix + key // the key on the nodes
	value := rand.Text() // 128 random bits, fresh for every acquisition
	ttl := cc.ttl
	start := c.now()
	var (
		r        *round
		counters []uint64 // with fencing: each granting node's counter
		fk       string
	)
	// A SET that waits in a node's queue past the validity is moot.
	bound := start.Add(ttl - cc.drift)
	var had uint64 // nodes where this waiter's own key may be set still
	given := cc.left != nil
	if given {
		had = cc.left.nodes()
	}
	if c.fencers != nil {
		counters, fk = make([]uint64, len(c.nodes)), driver.PrefixFenceKey(c.prefix, key)
		r = c.startUntil(ctx, OpAcquire, name, bound, func(ctx context.Context, i int, _ driver.Node) (bool, error) {
			ok, counter, err := c.fencers[i].SetNXFence(ctx, key, value, ttl, fk)
			counters[i] = counter // read by the caller only after this reply
			return ok, err
		})
	} else if c.direct && c.identities.done.Load() {
		// One node, its identity known (two nodes cannot be one server
		// then): the SET straight from here, and a round only for an
		// attempt that fails, as startUntil's would have been.
		var now time.Time // read again, unless start is the real clock's
		if c.realClock {
			now = start
		}
		d := c.loneCall(ctx, bound, now)
		ok, err := c.nodes[0].SetNX(d, key, value, ttl)
		c.loneDone(d)
		if ok && err == nil {
			if now := c.now(); now.Before(bound) {
				// As a round's grant, whose every call has returned:
				// no acquisition to follow (acq), no SET that failed.
				return &Lock{c: c, name: name, key: key, value: value, ttl: ttl, until: bound, keyEnd: now.Add(ttl + time.Millisecond), setTTL: ttl, granted: now.Sub(clockBase)}, outcome{}, nil
			}
		}
		r = c.loneRound(ctx, ok, err)
	} else {
		r = c.startUntil(ctx, OpAcquire, name, bound, func(ctx context.Context, _ int, n driver.Node) (bool, error) {
			return n.SetNX(ctx, key, value, ttl)
		})
	}
	ok := r.wait(ctx)
	if !ok && r.decided && had != 0 {
		ok = r.waitPastOwn(ctx, had)
	}
	if !ok && r.decided {
		r.waitVerdict(ctx) // whether retrying can help (outcome.permanent), ErrUnavailable
	}
	var (
		token   uint64
		errs    []error
		ferr    error
		fperm   bool // the fence write's errors leave no quorum possible (see fence)
		untilAt = start.Add(ttl - cc.drift)
	)
	if ok || r.decided && r.refused > 0 {
		// Two nodes that are one server must not count as two; and a
		// refusal may be the second address of a server that granted
		// (its key set already), which would refuse every attempt as if
		// the lock were held elsewhere: a quorum of two addresses of one
		// server, say, never granted, the duplicate never found.
		if err := c.checkAnswered(ctx, r, start, !ok); err != nil {
			left := cc.leftovers(len(c.nodes))
			c.abandon(ctx, r, key, value, ttl, left)
			if err == errIdentityCut {
				return nil, outcome{left: left, r: r}, errors.Join(r.err(ctx, ErrNotObtained), err)
			}
			return nil, outcome{left: left, r: r}, badInput(ctx, err) // like bad input: retrying cannot fix it
		}
	}
	if ok && c.fencers != nil {
		token, fperm, ferr = c.fence(ctx, r, counters, key, value, fk)
		if ferr == errFenceExhausted {
			left := cc.leftovers(len(c.nodes))
			c.abandon(ctx, r, key, value, ttl, left)
			return nil, outcome{left: left, r: r}, badInput(ctx, ferr) // like bad input: retrying cannot fix it
		}
		ok = ferr == nil
	}
	if now := c.now(); ok && now.Before(untilAt) {
		// keyEnd: the SETs counted answered before now (see Lock.keyEnd).
		l := &Lock{c: c, name: name, key: key, value: value, token: token, ttl: ttl, until: untilAt, keyEnd: now.Add(ttl + time.Millisecond), setTTL: ttl, acq: r, granted: now.Sub(clockBase)}
		r.setTTLms = uint32((ttl + time.Millisecond - 1) / time.Millisecond) // MaxTTL fits
		r.grant(l)
		return l, outcome{r: r}, nil
	}
	clearWake := given && c.mayWin(r, had)
	left := cc.leftovers(len(c.nodes))
	c.abandon(ctx, r, key, value, ttl, left)
	switch {
	case ferr != nil:
		// The fence write's votes (in ferr, with ctx.Err() when ctx had
		// ended by then) are the verdict, and the *VoteError that
		// errors.As finds: a quorum granted the SETs, whose votes would
		// say nothing of why (and contradict the ErrUnavailable of a
		// write too many nodes failed). The SETs' node errors stay.
		errs = append(errs, ErrNotObtained, ferr)
		errs = append(errs, r.errs...)
		if err := ctx.Err(); err != nil && !errors.Is(ferr, err) {
			// ctx ended after the fence's verdict, while abandon
			// waited for the releases: the call's error has it, as
			// r.err gives it to the other verdicts, read after abandon.
			errs = append(errs, err)
		}
	case ok:
		errs = append(errs, r.err(ctx, ErrNotObtained), fmt.Errorf("no validity left: acquiring took %v of the %v TTL", c.now().Sub(start), ttl))
	default:
		errs = append(errs, r.err(ctx, ErrNotObtained))
	}
	return nil, outcome{finished: r.decided, permanent: r.permanentFailure() || fperm, clearWake: clearWake, left: left, r: r, had: had}, errors.Join(errs...)
}

// errNilContext is the error of the calls given a nil context.Context.
var errNilContext = errors.New("redlock: nil context.Context (use context.Background() when there is none)")

// admit waits for one of the Client's slots for an attempt made on the
// caller's goroutine (TryLock's, Lock's, and Do's after its first), or
// until ctx ends. The attempts without a free slot wait in the same queue
// as Do's first attempts (admitQ), in the order they came: a slot given
// back goes to the first of them, so that a stream of Do's never keeps the
// others waiting.
func (c *Client) admit(ctx context.Context) error {
	// A slot is free only while the queue is empty (leave hands a slot
	// to the first in the queue instead of freeing it).
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	c.admitMu.Lock()
	if len(c.admitQ) == 0 {
		select {
		case c.slots <- struct{}{}: // given back meanwhile
			c.admitMu.Unlock()
			return nil
		default:
		}
	}
	w := &doCall{c: c, done: make(chan struct{}), state: doQueued, self: true}
	c.admitQ = append(c.admitQ, w)
	c.admitMu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
	}
	c.admitMu.Lock()
	admitted := w.state == doAdmitted
	w.state = doCut // leave skips it
	c.admitMu.Unlock()
	if admitted { // as ctx ended: the slot goes to the next
		c.leave()
	}
	return ctx.Err()
}

// leave gives back the slot that an attempt took: to the first of the
// attempts that wait for one, if any. It starts a Do's first attempt on a
// worker, and wakes an attempt that waits on its own goroutine (admit).
func (c *Client) leave() {
	c.admitMu.Lock()
	for len(c.admitQ) > 0 {
		d := c.admitQ[0]
		c.admitQ[0] = nil
		c.admitQ = c.admitQ[1:]
		if d.state != doQueued {
			continue // its context ended: it left the queue
		}
		d.state = doAdmitted
		if d.self {
			c.admitMu.Unlock()
			close(d.done)
			return
		}
		stop := d.stop
		c.admitMu.Unlock()
		if stop != nil {
			stop()
		}
		c.workers.run(task{d: d})
		return
	}
	c.admitQ = nil // let the queue's array go once it is empty
	<-c.slots
	c.admitMu.Unlock()
}

// errAcquiring joins ErrNotObtained when another TryLock of the key is in
// flight in the Client.
var errAcquiring = errors.New("another attempt of this Client is acquiring the key")

// beginAcquire marks key as being acquired, unless it already is.
func (c *Client) beginAcquire(key string) bool {
	c.turnsMu.Lock()
	defer c.turnsMu.Unlock()
	if _, busy := c.acquiring[key]; busy {
		return false
	}
	if c.acquiring == nil {
		c.acquiring = make(map[string]chan struct{})
	}
	c.acquiring[key] = nil
	return true
}

func (c *Client) endAcquire(key string) {
	c.turnsMu.Lock()
	ended := c.acquiring[key]
	delete(c.acquiring, key)
	c.turnsMu.Unlock()
	if ended != nil {
		close(ended)
	}
}

// acquireEnded returns a channel that is closed once no TryLock of key is in
// flight in the Client: already closed when none is.
func (c *Client) acquireEnded(key string) <-chan struct{} {
	c.turnsMu.Lock()
	defer c.turnsMu.Unlock()
	ended, busy := c.acquiring[key]
	if !busy {
		return closedChan
	}
	if ended == nil {
		ended = make(chan struct{})
		c.acquiring[key] = ended
	}
	return ended
}

// abandon releases key after a failed attempt on every node that may hold
// it: one that granted it, one that failed (it may have applied the SET and
// lost the reply) and one that has not replied (it may apply it yet). A node
// that said false holds another's key: a refusal is definite (package
// driver's contract: SetNX answers false only for a key that holds another
// value, and a SET NX goes again after a lost reply only as
// driver.SetNXAgainScript, which counts this attempt's own value as set,
// never as a plain SET NX that would refuse it), and a release there
// would find nothing of this attempt's, while it loaded the node and, waited
// for, delayed the caller's next attempt by a round trip. abandon waits for
// the first release to the nodes that granted it, which are known to be
// responsive, so that the key is free there when TryLock returns. The nodes
// whose outcome is unknown get the release in the background, repeated until
// they answer (see settle), whatever ctx does, for at most a TTL after their
// outcome became unknown, or until Close; a late reply that refused it gets
// none. left, when not nil (a waiting Lock's attempt), counts the releases
// left to the background, from before abandon returns until they are done,
// so that the waiter can try again then (see lockWait).
func (c *Client) abandon(ctx context.Context, r *round, key, value string, ttl time.Duration, left *leftovers) {
	bg := context.WithoutCancel(ctx)
	deadline := c.now().Add(ttl)
	var first chan struct{} // made at the first node that granted it
	waitFor := 0
	for i, s := range r.state {
		switch s {
		case granted:
			if first == nil {
				first = make(chan struct{}, len(c.nodes))
			}
			waitFor++
			c.background(func() { c.settle(bg, i, key, value, 1, deadline, first, left) })
		case failed:
			c.settle(bg, i, key, value, 2, deadline, nil, left) // queued: it does not wait
		case pending:
			if left != nil { // counted until its reply is known
				left.add(i)
			}
		}
	}
	if late := r.pendingCount(); late > 0 {
		c.background(func() {
			for range late {
				rep := r.next()
				need := 1
				switch {
				case rep.err != nil:
					need = 2
				case !rep.ok:
					need = 0 // refused: another's key
				}
				if need > 0 {
					deadline := c.now().Add(ttl)
					c.settle(bg, rep.node, key, value, need, deadline, nil, left)
				}
				if left != nil {
					left.done(rep.node) // after settle counted its release, if any
				}
			}
		})
	}
	for range waitFor {
		<-first
	}
}

// release deletes key on node i if it holds value, publishing the release
// where the node can; channel is driver.ReleaseChannel(key), or "" for the
// node to compute it.
func (c *Client) release(ctx context.Context, i int, key, value, channel string) (bool, error) {
	if cn := c.chanNotifiers[i]; cn != nil && channel != "" {
		return cn.ReleaseNotifyOn(ctx, key, value, channel)
	}
	if nn := c.notifiers[i]; nn != nil {
		return nn.ReleaseNotify(ctx, key, value)
	}
	return c.nodes[i].EvalRelease(ctx, key, value)
}
