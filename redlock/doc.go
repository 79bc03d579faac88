// Package redlock implements Redlock, the distributed lock algorithm from the
// Redis documentation, over N independent Redis masters.
//
// The algorithm lives here and talks to each master through a driver.Node. Each
// Redis client (go-redis, redigo, rueidis, valkey-go: the packages under
// drivers/) is a driver that registers itself under a name, in the way
// database/sql drivers do:
//
//	import (
//		"github.com/go-redlock/redlock/redlock"
//		_ "github.com/go-redlock/redlock/drivers/rueidis"
//	)
//
//	c, err := redlock.Open("rueidis", []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"})
//	...
//	l, err := c.Lock(ctx, "orders:42")
//	...
//	defer l.Unlock(ctx)
//
// [New] takes nodes directly and needs no registry. The driver in
// drivers/memory keeps its keys in the process, for unit tests of code that
// takes locks (its package doc says how, in testing/synctest bubbles too,
// and which faults it can make) and for the examples here; a driver of one's
// own registers itself with [Register] (see its example).
//
// # The algorithm
//
// A lock is a key set with SET key value NX PX ttl on every node at once, with
// a value of at least 128 random bits (crypto/rand.Text), fresh for each acquisition. The
// lock is held when a quorum of the N nodes (N/2+1) set the key and time is
// left: validity = ttl - elapsed - (ttl*driftFactor + 2ms), with elapsed
// measured on the monotonic clock. The client decides as soon as the outcome is
// known and never waits for a slow node after that, but for one case: an
// attempt that failed with an error retrying cannot fix, or a node's failure,
// among its replies (see Errors) waits for the replies still out, for up to
// twice the node timeout, when they could tell that no quorum is possible
// until someone fixes those errors, or that too many nodes failed
// (ErrUnavailable). When an attempt fails, the
// key is released on every node but those that refused it, including those that
// failed or did not answer, because a SET may have been applied with its reply
// lost (a refusal is definite: a node answers false only for another's key). Release and
// extend are Lua scripts that act only if the key still holds the lock's value.
//
// # Safety
//
// Redlock is safe only under timing assumptions: bounded network delays,
// bounded process pauses, bounded clock-rate error, and nodes that do not forget
// keys (persistence with appendfsync always, or nodes that stay down longer than
// the TTL after a crash). A holder that pauses past its validity can still act;
// only the protected resource can stop that, by checking a fencing token
// (WithFencing: every client of the key must use it, and the resource must
// refuse writes without a token). Use independent masters, never a primary
// and its replicas, and the same nodes in every client of a key: two
// clients over different node lists can both hold a lock, since their
// quorums need not meet. The README's safety section and SAFETY.md say more.
//
// # Errors
//
// A lock that was not obtained gives an error matching [ErrNotObtained]; an
// Extend, Unlock or TTL that found the lock no longer held by a quorum gives
// [ErrLockLost]. Either also matches [ErrUnavailable] when too many nodes
// failed for a quorum to be possible, rather than refused; the counts are in
// a [*VoteError]. The per-node causes are joined in as [*NodeError] values,
// and when the context ended its error is in the chain too: use errors.Is and
// errors.As. Lock and Do stop retrying at once when so many nodes answer an
// error that retrying cannot fix (a wrong password, an ACL refusal, a
// read-only replica, a database or a command the server does not have, a
// Redis Cluster's server given as one server that redirects the key to
// another node of its cluster: see driver.PermanentCode; a node made over a
// nil client, driver.ErrNilClient; or ErrClosed, from nodes closed or over clients
// their user closed) that no quorum is possible. An attempt (or an Extend)
// decides as soon as a quorum is out of reach, so one that failed with such an error among its
// replies waits for the nodes that had not answered, for up to twice the node
// timeout, when their replies could make such errors more than len(nodes)-Quorum: a
// node that is down, failing at once, does not hide the other nodes'
// refusals. Nodes down or timing out (errors retrying may fix) are retried,
// however many: only such errors, when they alone leave too few nodes for a
// quorum, stop Lock at once.
//
// # Per-call options
//
// TryLock, Lock and Do take the [Option] type of [New] and [Open], for that
// call only: [WithTTL], and for Lock and Do [WithBackoff] and
// [WithMaxAttempts], and for Do [WithExtendInterval]. Options that only a
// Client takes are refused by name.
//
// # Observation
//
// [WithLogger] logs through log/slog: lost locks and failed extensions at
// Warn, attempts and node errors at Debug. [WithObserver] gives every event
// to an [Observer]: each acquisition attempt, Lock, Do, Extend and Unlock,
// each node call, the end of each lock's life and each wake of a waiter (by
// a release, or by the end of its Client's other attempt on the key), with
// contexts an observer can carry a trace span in. The module
// github.com/go-redlock/redlock/redlockotel is an Observer for OpenTelemetry.
// Without observers, none of this costs an allocation or a clock read.
package redlock
