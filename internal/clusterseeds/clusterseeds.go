// Package clusterseeds refuses a node given as a Redis Cluster
// (redis://SEED?cluster=true&addr=SEED2...) whose seeds are nodes of two
// clusters. The cluster clients (go-redis, rueidis, valkey-go) read the slot
// map from a seed taken at random, so two Clients opened with such an address
// could each lock on another cluster, and both be granted one lock.
//
// A node's [Checker] asks every seed for CLUSTER SLOTS once, when the node is
// first used, before the client reads its slot map (see [Checker.Check]),
// and refuses the node for good if two seeds that answered name no node ID
// in common: every call then fails with an error that names them and
// matches driver.ErrSeedsOfTwoClusters, which driver.PermanentCode finds.
// The command needs no right that the client's own reading of the map does
// not need.
//
// A seed that does not answer is skipped, as the clients skip it; the
// client may still dial it later (go-redis when every node of its map
// failed, rueidis on any refresh of the map, where its seeds stay among the
// servers asked), so the driver's dialer calls [Checker.Admit] before it
// connects to an address: a seed that was not vouched for is asked then,
// and the connection is made only if the seed answered and agrees. No
// client thus reads a map from a seed that the check has not covered.
// (goredis.New, over a cluster client of the caller's, gates the client's
// node clients made after the first check by a dial hook, and only while a
// seed is unvouched, see [Checker.Unvouched] and [Checker.Settled]; those
// the client made before are the caller's.)
//
// Only a disagreement on evidence refuses: a seed that names no slot (a
// server that is not yet a node of any cluster, before CLUSTER MEET or its
// first gossip, or one that answers with an error) is neither vouched for
// nor held against the others. A node being added to the cluster knows the
// IDs of the nodes that serve slots as soon as it knows any slot, and these
// are the other seeds' too, so it is never refused.
//
// A seed vouched for is not asked again. The check is of the seeds as they
// are at the node's first use: a failover, a node or replica added, a slot
// moved keep the cluster's node IDs; an address that later serves a node
// of another cluster (a node reset and met into it, an address reused by
// another cluster's server) is not seen. Asking at every dial would not
// see it either: rueidis and valkey-go read the map again over the
// connections they keep, to every node and seed, and go-redis from any
// node of its map. Nor is a refusal ever undone, so asking again would
// refuse for good a cluster all of whose nodes were replaced meanwhile.
// The README says not to move such an address while Clients run.
package clusterseeds

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// Ask returns the reply to CLUSTER SLOTS of the server at seed, decoded as
// the clients decode it (nested []any of strings and integers), read on a
// connection of its own, bounded by ctx. It returns a nil reply and no error
// when the server answered with an error reply (it gives the client no map
// either), and an error when it did not answer.
type Ask func(ctx context.Context, seed string) (any, error)

// Checker checks the seeds of one cluster node. A nil Checker (a node with
// one seed, which cannot disagree with itself) checks nothing.
type Checker struct {
	seeds   []string
	ask     Ask
	timeout time.Duration

	// refused is the refusal, once there is one: it never ends.
	refused atomic.Pointer[error]

	once    sync.Once
	done    chan struct{} // closed when the first check ended
	closing context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the first check's goroutine

	mu      sync.Mutex
	closed  bool              // Close was called: no check starts
	vouched map[string]bool   // seeds that answered and agree
	ids     map[string]string // the node IDs the vouched seeds named, and the first seed that named each
}

// New returns the Checker of a cluster node whose seeds are seeds, as its
// client dials them, asking each with ask bounded by timeout; nil for fewer
// than two seeds.
func New(seeds []string, timeout time.Duration, ask Ask) *Checker {
	if len(seeds) < 2 {
		return nil
	}
	closing, cancel := context.WithCancel(context.Background())
	return &Checker{seeds: slices.Clone(seeds), ask: ask, timeout: timeout, done: make(chan struct{}),
		closing: closing, cancel: cancel, vouched: make(map[string]bool), ids: make(map[string]string)}
}

// Err returns the node's refusal, or nil: one atomic load.
func (c *Checker) Err() error {
	if c == nil {
		return nil
	}
	if p := c.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// Check returns once every seed answered or did not answer within the
// Checker's timeout (the first call starts the check, on a goroutine of the
// Checker's, which Close ends; later calls wait for it, and once it ended
// return at once), with the refusal if two seeds disagree; or ctx's error,
// wrapped, if ctx ends first.
func (c *Checker) Check(ctx context.Context) error {
	if c == nil {
		return nil
	}
	c.once.Do(func() {
		c.mu.Lock()
		closed := c.closed
		if !closed {
			c.wg.Add(1)
		}
		c.mu.Unlock()
		if closed {
			close(c.done) // checks nothing: every call on the node fails anyway
			return
		}
		go c.checkAll()
	})
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	select {
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return fmt.Errorf("checking that the seeds are of one cluster: %w", ctx.Err())
	}
}

// checkAll asks every seed at once, each bounded by the timeout, and takes
// the answers in the seeds' order.
func (c *Checker) checkAll() {
	defer c.wg.Done()
	defer close(c.done)
	ctx, cancel := context.WithTimeout(c.closing, c.timeout)
	defer cancel()
	replies := make([]any, len(c.seeds))
	errs := make([]error, len(c.seeds))
	var wg sync.WaitGroup
	for i, seed := range c.seeds {
		wg.Go(func() { replies[i], errs[i] = c.ask(ctx, seed) })
	}
	wg.Wait()
	for i, seed := range c.seeds {
		if errs[i] == nil {
			c.take(seed, replies[i])
		}
	}
}

// Admit returns nil if the client may connect to addr: an address that is
// no seed, or a seed vouched for. A seed not vouched for is asked first,
// bounded by ctx and the Checker's timeout: it is admitted if it agrees with
// the seeds vouched for, or answered with no slot; else Admit returns the
// refusal (it disagrees) or the reason it did not answer, and the client
// does not connect. Once the node is refused, it returns the refusal.
func (c *Checker) Admit(ctx context.Context, addr string) error {
	if c == nil {
		return nil
	}
	if err := c.Err(); err != nil {
		return err
	}
	if !slices.Contains(c.seeds, addr) {
		return nil
	}
	c.mu.Lock()
	known := c.vouched[addr]
	c.mu.Unlock()
	if known {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	reply, err := c.ask(ctx, addr)
	if err != nil {
		return fmt.Errorf("seed %s, not yet checked to be of the node's cluster: %w", addr, err)
	}
	c.take(addr, reply)
	return c.Err()
}

// Unvouched reports whether addr is a seed not vouched for: one that did
// not answer the first check (or has not been asked yet), or answered with
// no slot, and has not agreed since; Admit asks such a seed before the
// client connects to it.
func (c *Checker) Unvouched(addr string) bool {
	if c == nil || !slices.Contains(c.seeds, addr) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.vouched[addr]
}

// Settled reports whether every seed is vouched for: Admit then admits
// every address, unless the node is refused (a seed that disagreed is never
// vouched for, so a refused node is never settled).
func (c *Checker) Settled() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seeds {
		if !c.vouched[s] {
			return false
		}
	}
	return true
}

// take records seed's reply to CLUSTER SLOTS: a reply that names node IDs
// vouches for seed if they include one that a seed vouched for named (or
// none is vouched for yet), and refuses the node otherwise.
func (c *Checker) take(seed string, reply any) {
	ids := IDs(reply)
	if len(ids) == 0 {
		return // not (yet) a node of a cluster that serves slots
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused.Load() != nil {
		return
	}
	other := ""
	for _, id := range ids {
		if s, ok := c.ids[id]; ok {
			other = s
			break
		}
	}
	if other == "" && len(c.ids) > 0 {
		for _, s := range c.seeds {
			if c.vouched[s] {
				other = s // the first vouched for, in the seeds' order
				break
			}
		}
		err := fmt.Errorf("%w: %s and %s are nodes of different clusters (their CLUSTER SLOTS name no node ID in common): the cluster clients read the slot map from a seed taken at random, so Clients given this address could lock on different clusters and two of them hold one lock; give the seeds of one cluster only", driver.ErrSeedsOfTwoClusters, other, seed)
		c.refused.Store(&err)
		return
	}
	for _, id := range ids {
		if _, ok := c.ids[id]; !ok {
			c.ids[id] = seed
		}
	}
	c.vouched[seed] = true
}

// IDs returns the node IDs that a reply to CLUSTER SLOTS names: each slot
// range is [start, end, node...], each node [host, port, id, ...] (Redis
// 4.0 and later). Anything else in the reply is skipped.
func IDs(reply any) []string {
	ranges, _ := reply.([]any)
	var ids []string
	for _, r := range ranges {
		fields, _ := r.([]any)
		for i := 2; i < len(fields); i++ {
			node, _ := fields[i].([]any)
			if len(node) < 3 {
				continue
			}
			if id, ok := node[2].(string); ok && id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Close ends the first check, if it is under way, and waits for it.
func (c *Checker) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}
