package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

// identityRetry is how often the Client asks again the nodes that have not
// told their identity yet (they were down, say).
const identityRetry = time.Second

// identities finds nodes that are one server or one cluster under
// different addresses (driver.Identifier): New cannot, since it must not
// reach the network. The first acquisition asks every node, and the nodes
// that have not answered are asked again at most once per identityRetry.
// An acquisition waits for the answers of the nodes that answered it, and
// the first one, briefly, for the others (see checkAnswered): a node that
// does not answer never holds one up for long.
type identities struct {
	done atomic.Bool // every Identifier answered (or a duplicate was found)

	mu     sync.Mutex // guards what follows; never held during a node call
	ids    [][]string // by node
	told   []bool     // by node: it answered
	asked  []bool     // by node: its question is in flight
	last   time.Time  // of the last round of questions
	asking bool       // a round of questions is in flight
	// firstRound is set while the first round of questions is in flight.
	firstRound bool
	began      bool          // an acquisition asked: its first round began (Connect's questions are not a round)
	changed    chan struct{} // closed, and replaced, when an answer or a question's end changes told or asked
	err        error         // the duplicate found, for every later acquisition
}

// askIdentities starts, when needed, the questions to the nodes that have
// not told their identity: at the first call, and then at most once per
// identityRetry; never for an acquisition whose ctx has ended, which sends
// nothing (its questions would keep Close waiting). It returns the
// duplicate found, if any, and does not wait for the answers (see
// checkAnswered).
func (c *Client) askIdentities(ctx context.Context) error {
	id := &c.identities
	if id.done.Load() {
		return id.err // set before done, never changed after
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.err != nil || ctx.Err() != nil {
		return id.err
	}
	c.initIdentitiesLocked()
	if !id.began {
		// The first round asks the nodes that Connect, if it ran, did
		// not hear from.
		id.began, id.firstRound = true, true
	} else if id.asking || time.Since(id.last) < identityRetry {
		return nil
	}
	c.askLocked()
	return nil
}

// initIdentitiesLocked makes the identities' state at first use: by the
// first acquisition or by Connect. id.mu is held.
func (c *Client) initIdentitiesLocked() {
	id := &c.identities
	if id.ids == nil {
		id.ids, id.told, id.asked = make([][]string, len(c.nodes)), make([]bool, len(c.nodes)), make([]bool, len(c.nodes))
		id.changed = make(chan struct{})
	}
}

// recordIdentityLocked records node i's answer, ids, checks it against the
// others' (a duplicate fails every acquisition from then on), marks the
// identities done once every driver.Identifier answered, and wakes the
// acquisitions that wait for answers (checkAnswered). It returns the
// duplicate found, if any. ids is nil for a node that refused the question
// for good (refusedForGood: an ACL user without +info, INFO renamed away,
// with no other failure joined): it answered, with nothing to compare, and is taken as distinct and
// never asked again by this Client, so that its refusal is told once (one
// failed NodeCall, one Warn of WithLogger), not at every acquisition once
// per identityRetry for as long as the Client lives, each with an INFO
// sent. id.mu is held.
func (c *Client) recordIdentityLocked(i int, ids []string) error {
	id := &c.identities
	id.ids[i], id.told[i] = ids, true
	if id.err == nil {
		if err := c.duplicateIdentity(); err != nil {
			id.err = err
			id.done.Store(true)
		}
	}
	if id.err == nil && c.everyIdentityToldLocked() {
		id.done.Store(true)
	}
	c.identityChangedLocked()
	return id.err
}

// identityChangedLocked wakes the acquisitions that wait for an answer or a
// question's end (checkAnswered). id.mu is held.
func (c *Client) identityChangedLocked() {
	id := &c.identities
	close(id.changed)
	id.changed = make(chan struct{})
}

// everyIdentityToldLocked reports whether every node that is a
// driver.Identifier told its identity. id.mu is held.
func (c *Client) everyIdentityToldLocked() bool {
	answered := 0
	for _, t := range c.identities.told {
		if t {
			answered++
		}
	}
	return answered == countIdentifiers(c.nodes)
}

// identityGrace is the least time the first acquisition waits, after its
// SET round decided, for the identities of the nodes that have answered
// neither: see checkAnswered.
const identityGrace = 10 * time.Millisecond

// checkAnswered returns an error if two nodes reach the same server, once r,
// an acquisition round that a quorum granted, or that a node refused (the
// second address of a server refuses the key the first set), decided. For a
// refused round (all), it waits for every node's reply, not a grace, and
// then for the identities of those that answered: the first address's
// grant may come after the second's refusal, and the round is lost anyway;
// each call ends by its node timeout. While the first round
// of questions is in flight, it waits, as long as ctx lets it (else
// errIdentityCut), for the identities of the nodes that answered r (they are
// up: they answer their questions too), taking the replies of r that come
// meanwhile, and for the others for at most grace more (as long as r took
// since start, and identityGrace at least): a node that is down or stalled
// then holds the first acquisitions up that long, not a node timeout, and
// another address of a server that answered is found. A node whose question
// failed (or that is not a driver.Identifier) is taken as distinct; a
// duplicate among nodes that had not answered is found when they do (asked
// again, in the background, every identityRetry, unless it refused the
// question for good: see recordIdentityLocked), and fails the acquisitions
// from then on.
func (c *Client) checkAnswered(ctx context.Context, r *round, start time.Time, all bool) error {
	id := &c.identities
	if id.done.Load() {
		return id.err
	}
	// Read only here, not on every acquisition once the identities are
	// known: a clock read is not free (110-160ns on a virtual machine).
	grace := c.now().Sub(start)
	var (
		graceOver <-chan time.Time
		over      bool // the grace has passed; grace may be 0 before (a round that took no time on a fake clock)
	)
	for {
		r.drain()
		id.mu.Lock()
		if id.err != nil {
			err := id.err
			id.mu.Unlock()
			return err
		}
		answered, others := false, false
		for i, st := range r.state {
			if id.asked[i] {
				if st != pending {
					answered = true
				} else {
					others = true
				}
			}
		}
		first, changed := id.firstRound, id.changed
		id.mu.Unlock()
		switch {
		case !first:
			// Later rounds ask in the background: a node whose answer
			// does not come (its INFO fails to return while its SETs do)
			// must not hold up every acquisition.
			return nil
		case answered:
		case others && (all || !over):
			if graceOver == nil && !all {
				t := time.NewTimer(max(grace, identityGrace))
				defer t.Stop()
				graceOver = t.C
			}
		default:
			return nil
		}
		var replies <-chan int32
		if r.pendingCount() > 0 {
			replies = r.replies
		}
		select {
		case <-changed:
		case v := <-replies:
			r.record(r.take(v))
		case <-graceOver:
			over = true
		case <-ctx.Done():
			return errIdentityCut
		}
	}
}

// errIdentityCut is checkAnswered's error when the context ended first.
var errIdentityCut = errors.New("redlock: the context ended while the nodes told their identities (the check that no two are one server): released")

// askLocked asks the nodes that have not told their identity, each on a
// goroutine of its own bounded by the node timeout, in the background (Close
// waits for it); each answer is recorded, and checked against the others,
// as it comes. id.mu is held.
func (c *Client) askLocked() {
	id := &c.identities
	id.asking, id.last = true, time.Now()
	var ask []int
	for i, n := range c.nodes {
		if _, ok := n.(driver.Identifier); ok && !id.told[i] {
			ask = append(ask, i)
			id.asked[i] = true
		}
	}
	c.background(func() {
		var wg sync.WaitGroup
		for _, i := range ask {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(c.quit, c.nodeTimeout)
				defer cancel()
				began := time.Now()
				ids, err := c.nodes[i].(driver.Identifier).Identity(ctx)
				if err != nil && c.obs != nil {
					// Before the answer is recorded: an acquisition that
					// waits for it returns after the observers heard.
					c.observeNode(ctx, i, OpIdentity, "", began, false, err)
				}
				id.mu.Lock()
				defer id.mu.Unlock()
				id.asked[i] = false
				switch {
				case err == nil:
					c.recordIdentityLocked(i, ids)
				case refusedForGood(err):
					c.recordIdentityLocked(i, nil) // not asked again
				default:
					c.identityChangedLocked()
				}
			})
		}
		wg.Wait()
		id.mu.Lock()
		defer id.mu.Unlock()
		id.asking, id.firstRound = false, false
		c.identityChangedLocked()
		if c.everyIdentityToldLocked() {
			id.done.Store(true)
		}
	})
}

// duplicateIdentity returns an error naming two nodes that answered one ID,
// which matches ErrSameServer.
// id.mu is held.
func (c *Client) duplicateIdentity() error {
	id := &c.identities
	for i, a := range id.ids {
		if !id.told[i] {
			continue
		}
		for j, b := range id.ids[:i] {
			if !id.told[j] {
				continue
			}
			for _, s := range a {
				if slices.Contains(b, s) {
					msg := fmt.Sprintf("redlock: nodes %d (%s) and %d (%s) reach the same server (%s): a node must be given once, or it counts twice towards the quorum", j+1, c.names[j], i+1, c.names[i], s)
					// A cluster's node ID: both are that cluster, or one
					// is and the other one of its servers.
					cluster := strings.HasPrefix(s, "node:")
					if cluster {
						msg += "; " + redisaddr.ClusterSeedsHint
					}
					return &sameServerError{msg, cluster}
				}
			}
		}
	}
	return nil
}

func countIdentifiers(nodes []driver.Node) int {
	n := 0
	for _, node := range nodes {
		if _, ok := node.(driver.Identifier); ok {
			n++
		}
	}
	return n
}

// refusedForGood reports whether err, the error of a node's identity
// question, refuses it for good (driver.CommandRefused) and says nothing
// else: every error of every join in its chain is such a refusal. A
// refusal joined with another failure is not: a cluster node's question
// asks its primaries in turn (rueidis, valkey-go), whose ACLs are each
// server's own, and one primary's NOPERM beside another's timeout leaves
// the second to be asked again; nor is a reply that came as the question's
// context ended (driver.ContextError joins the two), which is asked again
// too.
func refusedForGood(err error) bool {
	if !driver.CommandRefused(err) {
		return false
	}
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !refusedForGood(e) {
					return false
				}
			}
			return true
		}
		err = errors.Unwrap(err)
	}
	return true
}
