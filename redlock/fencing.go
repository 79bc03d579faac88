package redlock

import (
	"context"
	"errors"
	"math"

	"github.com/go-redlock/redlock/driver"
)

// ErrFenceNotWritten joins ErrNotObtained when a lock was granted but its
// fencing token could not be written to a quorum. The *VoteError in the
// chain then has the votes of that write (it matches ErrUnavailable when too
// many nodes failed it), not those of the SETs, which a quorum granted.
var ErrFenceNotWritten = errors.New("redlock: fencing token not written to a quorum")

// errFenceExhausted is the error of an acquisition whose granting nodes'
// largest fencing counter is 2^64-1: no token is larger. Retrying cannot
// fix it, so, as for bad input, it does not match ErrNotObtained, and Lock
// and Do stop at once.
var errFenceExhausted = errors.New("redlock: the fencing counter of the key's slot is at its largest value (2^64-1): no larger token can be issued")

// fence computes the token of a granted lock and writes it back to a quorum.
// When the write fails, its second result reports whether so many nodes
// answered it with errors that retrying cannot fix that no quorum could
// write it (a counter that holds no number: a lock named as its own
// counter), as the SETs' round reports it for them: the attempt's error
// says so, and Lock and Do stop (outcome.permanent).
//
// Every grant of key wrote its token to a quorum of counters, and any two
// quorums intersect, so the largest counter among the nodes that granted this
// lock is at least the last token issued: one more is larger than every token
// before it. Writing it back to a quorum (where this lock's value still holds)
// makes the same true for the next grant. Counters never expire; a node that
// loses them in a crash (no appendfsync always) can make a token repeat.
func (c *Client) fence(ctx context.Context, r *round, counters []uint64, key, value, fk string) (uint64, bool, error) {
	var highest uint64
	for i, s := range r.state {
		if s == granted {
			highest = max(highest, counters[i])
		}
	}
	if highest == math.MaxUint64 {
		// No token is above it: one more would wrap to 0, a lock without
		// fencing to the resource.
		return 0, false, errFenceExhausted
	}
	token := highest + 1
	w := c.start(ctx, OpFence, r.keyName(), func(ctx context.Context, i int, _ driver.Node) (bool, error) {
		return c.fencers[i].RaiseFence(ctx, key, value, fk, token)
	})
	if !w.wait(ctx) {
		if w.decided {
			w.waitVerdict(ctx) // whether retrying can help, as for the SETs (see tryLock)
		}
		return 0, w.permanentFailure(), w.err(ctx, ErrFenceNotWritten)
	}
	return token, false, nil
}

// tokenKey is the context key under which Do gives fn its lock's fencing
// token (see TokenFrom).
type tokenKey struct{}

// TokenFrom returns the fencing token of the lock that Do holds while it runs
// fn, read from fn's context ctx or a context made from it, and true; it
// returns 0 and false for any other context, and for fn's context when the
// Client was made without WithFencing (whose locks have no token). Pass the
// token to the protected resource with every write, as Lock.Token's is: the
// token of a Do's lock does not change while Do extends the lock.
func TokenFrom(ctx context.Context) (uint64, bool) {
	if ctx == nil {
		return 0, false
	}
	t, ok := ctx.Value(tokenKey{}).(uint64)
	return t, ok && t != 0
}
