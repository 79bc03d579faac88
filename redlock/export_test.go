package redlock

import (
	"context"
	"runtime"
	"time"
)

// SetClock makes c measure elapsed time by now, for simulation with a fake clock.
func SetClock(c *Client, now func() time.Time) { c.now, c.realClock = now, false }

// TryLockCore is TryLock without its observation wrapper.
func TryLockCore(c *Client, ctx context.Context, key string) (*Lock, error) {
	cc, err := c.callOptions("TryLock", tryLockOptions, nil)
	if err != nil {
		return nil, err
	}
	l, _, err := c.tryLock(ctx, key, cc, false)
	return l, err
}

// UnlockCore is Unlock without its observation wrapper.
func UnlockCore(l *Lock, ctx context.Context) error {
	_, _, err := l.unlock(ctx)
	return err
}

// ExtendCore is Extend without its observation wrapper.
func ExtendCore(l *Lock, ctx context.Context, ttl time.Duration) error {
	_, err := l.extend(ctx, ttl)
	return err
}

// CallOptions reads the settings of a call of Do with opts, for a test of
// its cost.
func CallOptions(c *Client, opts ...Option) error {
	_, err := c.callOptions("Do", doOptions, opts)
	return err
}

// LateSetRepeatsUntil is how long Unlock would repeat the release of a SET of
// l's acquisition that answered now, l having a pending SET and its key
// expiring at once: the SET's TTL from now.
func LateSetRepeatsUntil(l *Lock) time.Time {
	l.mu.Lock()
	acq := l.acq
	l.mu.Unlock()
	return newLateSets(l, context.Background(), acq, time.Time{}).deadlineNow()
}

// ExtendSteps registers an Extend of ttl on l, starting now, without
// sending anything, as Extend does before its calls go out, and returns the
// steps that follow: its calls all returned, it was judged with a quorum
// (finishExtend's error), for a test to run them in a chosen order.
func ExtendSteps(l *Lock, ttl time.Duration) (returned func(failed bool), judged func() error, err error) {
	start := l.c.now()
	if _, err := l.beginExtend(start, ttl, drift(ttl, l.c.driftFactor), nil, false); err != nil {
		return nil, nil, err
	}
	returned = func(failed bool) { l.extendReturned(ttl, failed) }
	judged = func() error {
		ctx := context.Background()
		return l.finishExtend(ctx, l.c.newRound(ctx), true, start, ttl)
	}
	return returned, judged, nil
}

// WaitIdle waits, without allocating, until nothing is in flight on c: the
// calls that a round left running after its decision (Unlock returns at a
// quorum) included, so that a test that counts a call's allocations counts
// all of them within its measure, none after it.
func WaitIdle(c *Client) {
	for c.inflight.n.Load() != 0 {
		runtime.Gosched()
	}
}

// KeeperFanout is how many calls to one node an extension group keeps in
// flight at once.
const KeeperFanout = keeperFanout

// MaxRounds is how many rounds of TryLock, and how many of Unlock, a Client
// runs at once.
const MaxRounds = maxRounds

// SplitVoteNow marks key's turn in c, which a waiter of c must hold, as if a
// woken attempt of c on key had just lost to a split vote (turn.splitAt): its
// waiters' wakes wait a random delay for splitMemory.
func SplitVoteNow(c *Client, key string) bool {
	c.turnsMu.Lock()
	defer c.turnsMu.Unlock()
	t := c.turns[key]
	if t == nil {
		return false
	}
	t.splitAt.Store(time.Now().UnixNano())
	return true
}

// Direct reports whether c's TryLock takes its one-node direct path now (a
// Client of one node whose identity is known).
func Direct(c *Client) bool { return c.direct && c.identities.done.Load() }
