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
)

// Client acquires locks over a fixed set of independent Redis masters. It is
// safe for concurrent use; create one and share it.
type Client struct {
	nodes       []driver.Node
	names       []string // for NodeError: address without credentials
	quorum      int
	ttl         time.Duration
	drift       time.Duration
	nodeTimeout time.Duration
	driftFactor float64
	backoff     Backoff
	extendEvery time.Duration     // Do's extension interval
	prefix      string            // before every key on the nodes
	fencers     []driver.Fencer   // nil unless WithFencing
	notifiers   []driver.Notifier // nil entries for nodes without notifications
	notify      bool              // some node is a Notifier
	now         func() time.Time  // time.Now, replaced in simulation tests
	closed      atomic.Bool

	turnsMu sync.Mutex
	turns   map[string]*turn // Lock's waiters, by key

	workers *workers // run the node calls

	identities identities // nodes that are one server under two addresses
}

// New returns a Client over nodes, which must be independent masters: never a
// primary and its replicas. The quorum is len(nodes)/2+1. An odd count is
// best: an even count N tolerates no more failed nodes than N-1 does. A node
// given twice (the same value, or the same name from fmt.Stringer) is an
// error, since it would count twice towards the quorum. Nodes that are one
// server or one Redis Cluster under different addresses are found at first
// use, when they implement driver.Identifier (as the Redis drivers do):
// TryLock, Lock and Do then fail with an error that names them.
//
// The Client owns the nodes: Close closes them.
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
		if n == nil {
			return nil, fmt.Errorf("redlock: node %d is nil", i+1)
		}
		names[i] = fmt.Sprintf("#%d", i+1)
		if s, ok := n.(fmt.Stringer); ok {
			names[i] = s.String()
			if j, dup := seen[names[i]]; dup {
				return nil, fmt.Errorf("redlock: nodes %d and %d are both %s: a node must be given once", j+1, i+1, names[i])
			}
			seen[names[i]] = i
		}
		for j := range i {
			if sameNode(nodes[j], n) {
				return nil, fmt.Errorf("redlock: nodes %d and %d are the same node: a node must be given once", j+1, i+1)
			}
		}
	}
	c := &Client{
		nodes:       nodes,
		names:       names,
		quorum:      len(nodes)/2 + 1,
		ttl:         cfg.ttl,
		drift:       drift(cfg.ttl, cfg.driftFactor),
		nodeTimeout: cfg.nodeTimeout,
		driftFactor: cfg.driftFactor,
		backoff:     cfg.backoff,
		extendEvery: cfg.extendEvery,
		prefix:      cfg.keyPrefix,
		notifiers:   make([]driver.Notifier, len(nodes)),
		now:         time.Now,
		workers:     newWorkers(),
	}
	for i, n := range nodes {
		if nn, ok := n.(driver.Notifier); ok {
			c.notifiers[i], c.notify = nn, true
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
	return c, nil
}

func sameNode(a, b driver.Node) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// Quorum returns how many nodes must agree: len(nodes)/2+1.
func (c *Client) Quorum() int { return c.quorum }

// TTL returns the time to live of new locks.
func (c *Client) TTL() time.Duration { return c.ttl }

// Close closes every node. Locks still held expire after their TTL.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.workers.close()
	var errs []error
	for i, n := range c.nodes {
		if err := n.Close(); err != nil {
			errs = append(errs, &NodeError{Addr: c.names[i], Err: err})
		}
	}
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
// matching ErrNotObtained with the per-node causes joined in; by then the key
// has been released on every node. Bad input (an empty or too long key, a
// closed Client) gives an error that does not match ErrNotObtained.
//
// With WithFencing, the lock also gets a fencing token: see Lock.Token.
func (c *Client) TryLock(ctx context.Context, key string) (*Lock, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := c.checkIdentities(ctx); err != nil {
		return nil, err
	}
	name := key
	key = c.prefix + key // the key on the nodes
	value := rand.Text() // 128 random bits, fresh for every acquisition
	ttl := c.ttl
	start := c.now()
	var (
		r        *round
		counters []uint64 // with fencing: each granting node's counter
		fk       string
	)
	if c.fencers != nil {
		counters, fk = make([]uint64, len(c.nodes)), driver.FenceKey(key)
		r = c.start(ctx, func(ctx context.Context, i int, _ driver.Node) (bool, error) {
			ok, counter, err := c.fencers[i].SetNXFence(ctx, key, value, ttl, fk)
			counters[i] = counter // read by the caller only after this reply
			return ok, err
		})
	} else {
		r = c.start(ctx, func(ctx context.Context, _ int, n driver.Node) (bool, error) {
			return n.SetNX(ctx, key, value, ttl)
		})
	}
	ok := r.wait(ctx)
	var (
		token   uint64
		errs    []error
		ferr    error
		untilAt = start.Add(ttl - c.drift)
	)
	if ok && c.fencers != nil {
		token, ferr = c.fence(ctx, r, counters, key, value, fk)
		ok = ferr == nil
	}
	if ok && c.now().Before(untilAt) {
		return &Lock{c: c, name: name, key: key, value: value, token: token, until: untilAt, acq: r}, nil
	}
	c.abandon(ctx, r, key, value)
	errs = append(errs, r.err(ctx, ErrNotObtained))
	switch {
	case ferr != nil:
		errs = append(errs, ferr)
	case ok:
		errs = append(errs, fmt.Errorf("no validity left: acquiring took %v of the %v TTL", c.now().Sub(start), ttl))
	}
	return nil, errors.Join(errs...)
}

// abandon releases key on every node after a failed attempt: a node that said
// false may have applied the SET on a retry, one that failed may have applied it
// and lost the reply, and one that has not replied may apply it yet. It waits
// for the nodes that answered, which are known to be responsive, so that the
// key is free when TryLock returns; the others are released in the background,
// each bounded by the node timeout, whatever ctx does.
func (c *Client) abandon(ctx context.Context, r *round, key, value string) {
	bg := context.WithoutCancel(ctx)
	release := func(i int) {
		rctx, cancel := context.WithTimeout(bg, c.nodeTimeout)
		// No publish: waking waiters for a failed attempt's partial keys
		// would only make them collide again.
		c.nodes[i].EvalRelease(rctx, key, value)
		cancel()
	}
	done := make(chan struct{}, len(c.nodes))
	waitFor := 0
	for i, s := range r.state {
		switch s {
		case granted, refused:
			waitFor++
			go func() { release(i); done <- struct{}{} }()
		case failed:
			go release(i)
		}
	}
	if late := r.pendingCount(); late > 0 {
		go func() {
			for range late {
				release((<-r.replies).node)
			}
		}()
	}
	for range waitFor {
		<-done
	}
}

// release deletes key on node i if it holds value, publishing the release
// where the node can.
func (c *Client) release(ctx context.Context, i int, key, value string) (bool, error) {
	if nn := c.notifiers[i]; nn != nil {
		return nn.ReleaseNotify(ctx, key, value)
	}
	return c.nodes[i].EvalRelease(ctx, key, value)
}
