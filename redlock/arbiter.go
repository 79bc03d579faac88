package redlock

import (
	"context"
	"errors"
	"time"
)

// errArbiterRefused joins ErrNotObtained when an attempt that asked the key's
// arbiter alone first was refused there (see Client.probe).
var errArbiterRefused = errors.New("the key's arbiter node refused it: another holds the key there")

// arbiter returns the node that an attempt of key (prefix included) asks
// alone first when waiters of several Clients compete for it (see probe), or
// -1 when it asks every node at once: with fewer than three nodes, or when
// the waiter's own key of an earlier attempt may still be set on that node
// (had, see leftovers.nodes), whose refusal would then be its own. Every
// Client that names the nodes alike picks the same one for a key, whatever
// their order (rendezvous hashing of the key with each node's name), and the
// keys spread over the nodes.
func (c *Client) arbiter(key string, had uint64) int {
	if len(c.nodes) < 3 {
		return -1
	}
	kh := fnv64(key)
	best, arb := uint64(0), -1
	for i, name := range c.names {
		if s := mix(fnv64(name) ^ kh); arb < 0 || s > best {
			best, arb = s, i
		}
	}
	if had&(1<<arb) != 0 {
		return -1
	}
	return arb
}

// probe sends set, an acquisition's SET, to node i alone (the key's arbiter),
// under ctx and bound as startUntil would, and then, unless the node refused
// it, to the other nodes: it returns their round, in which node i's reply is
// the probe's; nil when node i refused. The acquisition stays a quorum of
// SETs, its validity counted from before the probe; only the order changes:
// waiters of several Clients woken by one release then race on one node,
// where one wins, rather than on every node at once, where each node may
// grant another and none a quorum (a split vote, after which all release
// and retry). A node that failed the probe (an error, a timeout) is a failed
// node of the round, which sends the others their SET at once.
func (c *Client) probe(ctx context.Context, i int, name string, bound time.Time, set op) *round {
	began := time.Now()
	d := c.nodeCall(ctx, i, bound, began)
	// In flight until the round has the other nodes' calls in flight:
	// Close, which waits for the calls in flight, must not close the nodes
	// between a granted probe and the SETs that follow it (the attempt
	// would fail on the closed nodes, and its release of the probe's key
	// too, which would stay on the arbiter until it expires).
	defer c.loneDone(d)
	ok, err := set(d, i, c.nodes[i])
	if c.obs != nil {
		c.observeNode(ctx, i, OpAcquire, name, began, ok, err)
	}
	if !ok && err == nil {
		return nil
	}
	r := c.startRoundLater(ctx, OpAcquire, name, bound, set, nil, 1<<i)
	r.answered(i, ok, err)
	return r
}

// mix is MurmurHash3's 64-bit finalizer: every bit of h moves every bit of
// the result, which FNV's last bytes alone do not (its high bits, which the
// comparison of arbiter looks at first, would barely change with the key).
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// fnv64 is the 64-bit FNV-1a hash of s, without an allocation.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
