package redlock

import (
	"errors"
	"fmt"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/plural"
	"github.com/go-redlock/redlock/internal/redisaddr"
)

var (
	// ErrNotObtained is returned by TryLock, Lock and Do when the lock was
	// not obtained: too few nodes granted it, or too little validity was
	// left (for Lock and Do, in their last attempt, before ctx ended or
	// WithMaxAttempts's cap was reached).
	ErrNotObtained = errors.New("redlock: lock not obtained")

	// ErrLockLost is returned by Extend, Unlock and Lock.TTL when they could
	// not confirm that a quorum of nodes still holds the lock: fewer than a
	// quorum said they held it, or too few answered (node failures, the
	// context ending first; ErrUnavailable or ctx.Err() is then in the
	// chain too). After a failed Extend the lock is certainly over only once
	// Done is closed; until then it is held until Until, and a later Extend
	// may succeed; observers see which as ExtendDone.Lost. Do returns it
	// joined to fn's error when the lock was lost while fn ran (its validity
	// ended, an extension found it gone or was refused for good, or Close
	// stopped its extensions) or when its release was not confirmed by a
	// quorum: see Client.Do.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrUnavailable joins ErrNotObtained (TryLock, Lock, Do) or ErrLockLost
	// (Extend, Unlock, Lock.TTL, and Do's: see Client.Do) when too many nodes failed (errors,
	// timeouts: more than len(nodes)-Quorum of them) for a quorum to be
	// possible even had every other node agreed, rather than refused because
	// the key is held by someone else. The *VoteError in the same chain
	// has the counts. For Lock and Do, it is the verdict of the last attempt
	// that finished. An acquisition, or a caller's Extend, decides as soon
	// as a quorum is out of reach; one that failed with a node's failure
	// among its replies waits for the nodes that had not answered (up to
	// twice the node timeout) when their failures could make more than
	// len(nodes)-Quorum, so that a key held elsewhere on the nodes that
	// answer first does not hide nodes down or stalled (see VoteError).
	// Unlock, Lock.TTL and Do's extensions do not wait so: their verdict
	// counts the failures heard when a quorum was out of reach.
	ErrUnavailable = errors.New("redlock: too many nodes unavailable for a quorum")

	// ErrAlreadyUnlocked is returned by an Unlock of a lock that Unlock was
	// called for before, and joined with ErrLockLost by an Extend or TTL
	// after Unlock, which answer at once, without a call to the nodes, and
	// by one that was in flight when Unlock ran, whatever the nodes said.
	ErrAlreadyUnlocked = errors.New("redlock: lock already released by an earlier Unlock")

	// ErrSameServer is matched by the error of Connect, TryLock, Lock and
	// Do when two of the Client's nodes told the same identity
	// (driver.Identifier: one server, or one Redis Cluster, under two
	// addresses, such as localhost:6379 and 127.0.0.1:6379), which would
	// count twice towards the quorum. The error names both nodes; every
	// later acquisition returns it too, since retrying cannot fix it: give
	// each server once. It does not match ErrNotObtained.
	ErrSameServer = errors.New("redlock: two nodes reach the same server")

	// ErrClosed is returned by calls on a Client after Close, and is the
	// cause of a NodeError from a node that was closed. It is the same value
	// as driver.ErrClosed, which drivers return, so one errors.Is test covers
	// both.
	ErrClosed = driver.ErrClosed
)

// sameServerError is the error of two nodes that told one identity: its
// text names them, and it wraps ErrSameServer (so that what classifies
// errors by their innermost one, as redlockotel's error.type does, sees the
// sentinel, not this type). For two nodes that reach one Redis Cluster
// (cluster), its text ends with redisaddr.ClusterSeedsHint and it matches
// redisaddr.ErrSameCluster, for the command's note on --nodes.
type sameServerError struct {
	msg     string
	cluster bool
}

func (e *sameServerError) Error() string { return e.msg }

// Unwrap returns ErrSameServer.
func (e *sameServerError) Unwrap() error { return ErrSameServer }

// Is reports whether target is redisaddr.ErrSameCluster, for two nodes of
// one cluster.
func (e *sameServerError) Is(target error) bool {
	return e.cluster && target == redisaddr.ErrSameCluster
}

// NodeError is the failure of one node during a call. Errors from TryLock,
// Lock, Do, Extend, Unlock and Lock.TTL join one NodeError for each node that
// failed.
type NodeError struct {
	// Addr names the node: its address with any password removed.
	Addr string
	// Err is what went wrong.
	Err error
}

// Permanent reports whether the node's error is one that retrying cannot
// fix, as VoteError.Permanent counts them: a Redis error such as NOPERM or
// WRONGPASS (driver.PermanentCode), or ErrClosed. An observer uses it to
// tell which node's error decided a call that stopped for such errors.
func (e *NodeError) Permanent() bool { return permanentCode(e.Err) != "" }

// Error returns the node's address and the cause.
func (e *NodeError) Error() string {
	return fmt.Sprintf("redlock: node %s: %v", e.Addr, e.Err)
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// VoteError counts the votes of the nodes in a call that found no quorum. It
// is joined into the errors of TryLock, Lock, Do, Extend, Unlock and Lock.TTL
// that match ErrNotObtained or ErrLockLost; find it with errors.As. It matches
// ErrUnavailable (errors.Is) when Failed > Nodes-Needed.
//
// Nodes that had not answered when the call decided, and nodes whose calls
// failed because the caller's context ended, count in none of Granted,
// Refused and Failed.
type VoteError struct {
	// Granted is how many nodes agreed: granted the lock, extended or
	// released it, or (Lock.TTL) still hold it.
	Granted int
	// Refused is how many nodes answered no: the key is held by another
	// value, or no longer by this lock's.
	Refused int
	// Failed is how many nodes answered with an error or timed out.
	Failed int
	// Needed is the quorum.
	Needed int
	// Nodes is how many nodes the Client has.
	Nodes int
	// Permanent is how many of the Failed nodes answered an error that
	// retrying cannot fix: authentication, an ACL permission, a wrong type,
	// out of memory, a read-only replica, a database or a command the
	// server does not have, a Redis Cluster's redirection (MOVED, ASK) to a
	// node given as one server, a node made over a nil client
	// (driver.ErrNilClient; see driver.PermanentCode), or ErrClosed (the
	// node was closed, or the client under it). When more than
	// Nodes-Needed did, Lock and Do stop retrying. An acquisition (or an
	// extension of Do's) that failed with at least one of them waits for
	// the nodes that had not answered (an acquisition up to twice the node
	// timeout; an extension as long as its calls take: see Client.Do),
	// when they could make more than Nodes-Needed, so that they are
	// counted here. So does an acquisition, or a caller's Extend, that
	// failed with a Failed node, for the Failed count (ErrUnavailable).
	Permanent int

	code string // the permanent errors' codes, each once: "WRONGPASS", "WRONGPASS or NOAUTH"
}

// Error summarizes the votes.
func (e *VoteError) Error() string {
	s := fmt.Sprintf("%d of %d %s agreed, %d needed (%d refused, %d failed)", e.Granted, e.Nodes, plural.Nodes(e.Nodes), e.Needed, e.Refused, e.Failed)
	if e.unavailable() {
		s += ": too many nodes failed for a quorum"
	}
	if e.Permanent > e.Nodes-e.Needed {
		s += fmt.Sprintf("; %d answered %s, which retrying cannot fix", e.Permanent, e.code)
	}
	return s
}

func (e *VoteError) unavailable() bool { return e.Failed > e.Nodes-e.Needed }

// Is reports whether target is ErrUnavailable and too many nodes failed for a
// quorum.
func (e *VoteError) Is(target error) bool { return target == ErrUnavailable && e.unavailable() }
