package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// setScript says what a scriptedNode's SET does in an attempt.
type setScript int

const (
	setPlain      setScript = iota
	setLostReply            // applied, and fails at once (the reply lost)
	setSlowReply            // applied, and fails when its context ends
	setNotApplied           // fails at once, not applied
)

// scriptedNode is a memory node whose SETs do what sets says for the
// waiter's attempt under way (attempt, from an observer), and whose releases
// of the key of an attempt in slowRelease take 40ms each before they apply.
type scriptedNode struct {
	*memory.Node
	attempt     *atomic.Int32
	sets        map[int32]setScript
	slowRelease map[int32]bool
	mu          sync.Mutex
	of          map[string]int32 // the attempt of each value SET
}

func (n *scriptedNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	a := n.attempt.Load()
	n.mu.Lock()
	n.of[value] = a
	n.mu.Unlock()
	switch n.sets[a] {
	case setLostReply:
		_, _ = n.Node.SetNX(ctx, key, value, ttl)
		return false, errors.New("reply lost")
	case setSlowReply:
		_, _ = n.Node.SetNX(ctx, key, value, ttl)
		<-ctx.Done()
		return false, ctx.Err()
	case setNotApplied:
		return false, errors.New("not applied")
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n *scriptedNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	a, ok := n.of[value]
	n.mu.Unlock()
	if ok && n.slowRelease[a] {
		time.Sleep(40 * time.Millisecond)
	}
	return n.Node.EvalRelease(ctx, key, value)
}

// attemptHook is an Observer that records the waiter's attempt under way,
// and lengthens its Backoff to an hour from attempt 3 on.
type attemptHook struct {
	redlock.NopObserver
	attempt *atomic.Int32
	backoff *atomic.Int64
}

func (o attemptHook) Attempt(ctx context.Context, e redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.attempt.Store(int32(e.Attempt))
	if e.Attempt == 3 {
		o.backoff.Store(int64(time.Hour))
	}
	return ctx, nil
}

// A waiter whose attempt began while the releases of its earlier keys were
// in flight, saw them end during that attempt, and left keys of its own
// again, waits for the end of these new releases before it tries again
// ("as soon as all its keys' releases are answered", Lock's doc): not at
// once, on the notice that the earlier releases had ended, which no longer
// holds. Woken by that stale notice, it tried while its new key was still
// on a node, was refused there, and then, its one wake by the clean-up
// spent, slept its whole Backoff (an hour) though the lock was free a few
// milliseconds later.
//
// Three nodes, the node timeout 100ms. Attempt 1 (uncounted: Lock's first)
// fails on nodes 1 and 2; attempt 2, at once after subscribing, leaves its
// keys on both (replies lost), node 2's released slowly (done at +80ms).
// Attempt 3, on the 10ms Backoff, is refused by that key on node 2 and
// leaves its key on node 1 (a reply slower than the node timeout, at
// +110ms), released slowly (done at +190ms); node 2's releases end during
// it. Attempt 4 must wait for node 1's release, and then gets the lock
// (nodes 0 and 1).
func TestWaiterIgnoresTheClearNoticeOfReleasesEndedDuringItsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		var attempt atomic.Int32
		var backoff atomic.Int64
		backoff.Store(int64(10 * time.Millisecond))
		scripts := []struct {
			sets        map[int32]setScript
			slowRelease map[int32]bool
		}{
			{},
			{sets: map[int32]setScript{1: setNotApplied, 2: setLostReply, 3: setSlowReply}, slowRelease: map[int32]bool{3: true}},
			{sets: map[int32]setScript{1: setNotApplied, 2: setLostReply, 4: setNotApplied, 5: setNotApplied, 6: setNotApplied}, slowRelease: map[int32]bool{2: true}},
		}
		nodes := make([]driver.Node, len(mem))
		for i, m := range mem {
			nodes[i] = &scriptedNode{Node: m, attempt: &attempt, sets: scripts[i].sets, slowRelease: scripts[i].slowRelease, of: map[string]int32{}}
		}
		waiter := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond),
			redlock.WithBackoff(func(int) time.Duration { return time.Duration(backoff.Load()) }),
			redlock.WithObserver(attemptHook{attempt: &attempt, backoff: &backoff}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		l, err := waiter.Lock(ctx, "k")
		require.NoError(t, err, "the lock was free from +190ms; Lock made %d attempts", attempt.Load())
		require.Less(t, time.Since(start), time.Second)
		require.Equal(t, int32(4), attempt.Load(), "attempts")
		require.NoError(t, l.Unlock(context.Background()))
	})
}
