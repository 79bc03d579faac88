package driver

import (
	"context"
	"time"
)

// Optional interfaces. A Node may implement them to offer more; package
// redlock finds them by type assertion where it uses them, as database/sql
// does with its drivers' optional interfaces. The conformance suite tests them
// when a node has them.

// Fencer is implemented by nodes that keep fencing counters, which
// redlock.WithFencing needs. A fencing counter is a plain Redis string key
// holding a decimal number. It never expires, and it lives in the same hash
// slot as its lock key, at the name package redlock passes as fenceKey:
// [FenceKey](key), which every key of that slot shares, or for a Client with
// a key prefix [PrefixFenceKey](prefix, key), which the keys of that slot and
// prefix share.
type Fencer interface {
	// SetNXFence is SetNX that also returns the counter stored at fenceKey (0
	// when there is none), read in the same atomic step whether or not the key
	// was set. The Redis drivers run SetNXFenceScript with the keys key and
	// fenceKey and the arguments value, the TTL and [OldFenceKeys](key,
	// fenceKey), which it reads as far as the user may, returning the
	// largest counter; a driver whose counters never lived in Redis has no
	// old ones to read. A counter at fenceKey that holds no decimal number
	// of 64 bits fails SetNXFence and RaiseFence, before they write
	// anything, with an error that [PermanentCode] takes for one retrying
	// cannot fix.
	SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (ok bool, counter uint64, err error)

	// RaiseFence raises the counter at fenceKey to token, never lowering it,
	// only if key holds value, by running RaiseFenceScript. It reports whether
	// key held value.
	RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error)
}

// Notifier is implemented by nodes that publish releases and let waiters
// subscribe to them, so that a waiter in redlock's Lock retries as soon as the
// holder releases instead of polling.
type Notifier interface {
	// ReleaseNotify is EvalRelease that also publishes the release on
	// ReleaseChannel(key) with SPUBLISH when it deleted the key, by running
	// ReleaseNotifyScript.
	ReleaseNotify(ctx context.Context, key, value string) (bool, error)

	// Subscribe listens on ReleaseChannel(key) with SSUBSCRIBE (sharded
	// pub/sub; on a Redis Cluster, at the shard that owns the channel's slot,
	// following it when the slot moves). It arranges for a send on notify, without blocking (a send that
	// would block is dropped), each time a release of key is published on the
	// node, until cancel is called. It returns once the server has confirmed
	// the subscription, or with an error when ctx ends first or the
	// subscription fails. cancel must be called exactly once, and after it
	// returns nothing is sent on notify any more. Several subscriptions to
	// one key may be in place at once, and each lasts until its own cancel.
	Subscribe(ctx context.Context, key string, notify chan<- struct{}) (cancel func(), err error)
}

// Identifier is implemented by nodes that can tell which Redis servers they
// reach, so that redlock refuses two nodes that are one server or one
// cluster under different addresses: they would count twice towards the
// quorum.
type Identifier interface {
	// Identity returns IDs of the servers the node reaches: for a Redis
	// Cluster, "node:" and the node ID of each of its nodes (CLUSTER NODES);
	// for one server, "run:" and its run_id (INFO server), and also "node:"
	// and its node ID if it is cluster-enabled (CLUSTER MYID). Two nodes that
	// share an ID reach the same server. See IdentityOf.
	Identity(ctx context.Context) ([]string, error)
}

// TTLer is implemented by nodes that tell how long they still hold a lock,
// which redlock's Lock.TTL asks. A Node without it counts as failed there.
type TTLer interface {
	// TTL returns the remaining time to live of key, rounded down to the
	// millisecond, and true, if key holds value; it returns (0, false, nil)
	// otherwise. It runs TTLScript, atomically. A key that holds value
	// without a time to live (PTTL -1) is an error: a lock key always has
	// one.
	TTL(ctx context.Context, key, value string) (time.Duration, bool, error)
}
