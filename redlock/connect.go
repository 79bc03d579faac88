package redlock

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/drivernode"
)

// Connect warms the Client up: it asks every node that is a
// driver.Identifier which server it is (INFO's run_id with the Redis
// drivers), the question the Client asks at its first acquisition anyway,
// and records the answers, as database/sql's DB.PingContext makes a
// connection before the first query. A fresh node makes its connection
// (TCP, TLS, AUTH, HELLO) within its first call; without Connect that is
// the first acquisition's SET and question, both bounded by the node
// timeout, so that a TryLock, or a Lock or Do with WithMaxAttempts(1), on a
// fresh Client can fail with ErrUnavailable on a loaded machine or over a
// slow handshake, on nodes that are up. After Connect the first acquisition
// asks no node that told its identity here again: it sends its SETs only
// (and asks the others, as it would have, a node that refused the question
// included).
//
// A node that answered (or refused) the question is also left with the
// connections that its first acquisition takes at once, so that it dials
// none within its node timeout: with rueidis, valkeygo and redigo, the one
// connection the question made; with goredis (a node of its Open, on one
// server), two, made by a PING on each after the question (at a call that
// finds a single connection idle, a goredis node makes a spare in the
// background, which can take that connection before the call does). The
// other drivers send nothing more. The PINGs are part of the node's
// question, bounded and cut as it is (below); a PING cut ends in the
// background within the driver's timeouts or at Close, and a failed one
// fails no node: the acquisition dials as it would have. An acquisition
// that overlaps an earlier call on a node (the release that an Unlock
// leaves in flight once a quorum answered, say) may still need one more
// connection from a pool.
//
// Two addresses of one server (or one Redis Cluster) among the nodes that
// answered are reported by Connect itself, with the error (matching
// ErrSameServer) that TryLock, Lock and Do return from then on.
//
// Each question is bounded by ctx and by Close, not by the node timeout:
// give ctx the deadline the connections may take. Connect returns
//   - nil once every node answered, or failed while a quorum answered;
//   - nil once a quorum answered and one node timeout more has passed, or
//     ctx ended meanwhile: a node down or stalled does not hold it up once
//     the others can decide, and its question is cut;
//   - an error matching ErrUnavailable, joined with a *NodeError for each
//     node that failed, once too many nodes failed for a quorum to answer
//     (the first acquisition would fail alike);
//   - ctx.Err(), joined with the *NodeError of each node that had failed,
//     when ctx ended before a quorum answered (at once, asking no node,
//     when it had ended before the call);
//   - ErrClosed when the Client is closed, or Close begins meanwhile (its
//     questions are cut at once, so that Close, which waits for them, does
//     not wait a node timeout);
//   - an error matching ErrSameServer when two nodes answered one server.
//
// Its errors join ctx.Err() when ctx had ended. A node whose question is
// refused for good (driver.CommandRefused: an ACL user without +info, INFO
// renamed away) answered, for Connect: it is reachable, and its locks work,
// but its identity stays unknown, and neither later acquisitions nor a later
// Connect ask it again (as when an acquisition's question was refused): a
// +info granted later is checked by a new Client. A refusal that comes as
// Connect cuts the question (below) is not kept: the next acquisition asks
// the node again, and the observers hear the refusal then. A node that is not a driver.Identifier (the
// memory driver's, or a driver of your own without it) counts as answered
// without a call: over such nodes only, Connect returns nil, and makes no
// I/O. The observers hear each failed question (NodeCall, OpIdentity), as
// they hear the acquisitions', before Connect returns; not those that
// Connect itself cut once it had decided, or at Close, nor those that ctx's
// end cut (no node failed them).
//
// Connect may be called more than once, and concurrently with
// acquisitions: it asks only the nodes that have not told their identity
// yet, so that once every node answered it returns at once, with no I/O
// (concurrent calls, and an acquisition's first questions made meanwhile,
// may each ask a node). Every question it starts has ended when it
// returns (the goroutine that made it may still be finishing its
// bookkeeping, which Close waits for). Connect does not retry a node that
// failed: call it again.
func (c *Client) Connect(ctx context.Context) error {
	switch {
	case c.unmade():
		return badInput(ctx, errUnmade)
	case ctx == nil:
		return errNilContext
	case c.closed.Load():
		return badInput(ctx, ErrClosed)
	}
	id := &c.identities
	if id.done.Load() {
		return ended(ctx, id.err) // set before done, never changed after
	}
	id.mu.Lock()
	if id.err != nil {
		err := id.err
		id.mu.Unlock()
		return ended(ctx, err)
	}
	c.initIdentitiesLocked()
	var ask []int
	for i, n := range c.nodes {
		if _, ok := n.(driver.Identifier); ok && !id.told[i] {
			ask = append(ask, i)
		}
	}
	id.mu.Unlock()
	if len(ask) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		// No question with an ended context: it would be cut at once,
		// or answered, whichever the node does first.
		if len(c.nodes)-len(ask) >= c.quorum {
			return ended(ctx, c.identityErr())
		}
		return err
	}

	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i   int
		err error
	}
	answers := make(chan answer, len(ask)) // never blocks a question
	var (
		cut        atomic.Bool // Connect stopped waiting: the failures from now on are its own cut
		inFlight   int         // questions whose answer Connect has not taken
		graceTimer *time.Timer
	)
	defer func() {
		// Each question ends with qctx, which drivers honour: none is
		// left running when Connect returns.
		cut.Store(true)
		cancel()
		for range inFlight {
			<-answers
		}
		if graceTimer != nil {
			graceTimer.Stop()
		}
	}()
	for _, i := range ask {
		// Close waits for the questions in flight, as for the
		// acquisitions'; it begins by closing c.closing, at which
		// Connect cuts them.
		started := c.backgroundUnlessClosed(func() {
			began := time.Now()
			ids, err := c.nodes[i].(driver.Identifier).Identity(qctx)
			// A question cut by ctx's end failed nothing (see
			// cutByContext), as for Connect's count.
			heard := err != nil && !cut.Load() && !cutByContext(ctx, err)
			if heard && c.obs != nil {
				c.observeNode(qctx, i, OpIdentity, "", began, false, err)
			}
			// A refusal is recorded (never asked again) only when the
			// observers heard it: one that came as the question was cut
			// (driver.ContextError keeps the reply that came as its
			// context ended) is asked again by an acquisition, which
			// tells it, as for any question Connect cut.
			if refused := heard && refusedForGood(err); err == nil || refused {
				if refused {
					ids = nil // refused for good: not asked again (see recordIdentityLocked)
				}
				id.mu.Lock()
				c.recordIdentityLocked(i, ids)
				id.mu.Unlock()
			}
			if w, ok := c.nodes[i].(drivernode.Warmer); ok && (err == nil || driver.CommandRefused(err)) {
				// The node is reachable: the connections its pool
				// lends an acquisition at once are made now. A
				// failure fails nothing: the calls dial as they
				// would have.
				_ = w.Warm(qctx)
			}
			answers <- answer{i, err}
		})
		if !started {
			return ended(ctx, ErrClosed)
		}
		inFlight++
	}

	got := len(c.nodes) - len(ask) // answered: told before, or not a driver.Identifier
	failed := 0
	var errs []error // the failed nodes'
	var grace <-chan time.Time
	startGrace := func() {
		graceTimer = time.NewTimer(c.nodeTimeout)
		grace = graceTimer.C
	}
	if got >= c.quorum {
		startGrace()
	}
	for inFlight > 0 {
		select {
		case a := <-answers:
			inFlight--
			switch {
			case a.err == nil || driver.CommandRefused(a.err):
				if err := c.identityErr(); err != nil {
					return ended(ctx, err)
				}
				if got++; got == c.quorum {
					startGrace()
				}
			case cutByContext(ctx, a.err):
				// The node failed nothing.
			default:
				errs = append(errs, &NodeError{Addr: c.names[a.i], Err: a.err})
				if failed++; failed > len(c.nodes)-c.quorum {
					return ended(ctx, errors.Join(append([]error{ErrUnavailable}, errs...)...))
				}
			}
		case <-grace:
			return ended(ctx, c.identityErr())
		case <-ctx.Done():
			if got >= c.quorum {
				return ended(ctx, c.identityErr())
			}
			return errors.Join(append(errs, ctx.Err())...)
		case <-c.closing:
			return ended(ctx, ErrClosed)
		}
	}
	if got >= c.quorum {
		return ended(ctx, c.identityErr())
	}
	// Too few answered, and no more than len(nodes)-quorum failed: the
	// others were cut by ctx, which has ended, or whose deadline has
	// passed (cutByContext), so that this wait is over at once.
	<-ctx.Done()
	return errors.Join(append(errs, ctx.Err())...)
}

// identityErr returns the duplicate found among the nodes' identities, if
// any.
func (c *Client) identityErr() error {
	id := &c.identities
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.err
}

// cutByContext reports whether err, a question's, came from ctx's end: ctx
// ended, or its deadline passed and err says so (a driver that set a
// connection's deadline from ctx's sees it pass, as "i/o timeout", before
// ctx's own timer ends ctx).
func cutByContext(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline) && errors.Is(err, context.DeadlineExceeded)
}
