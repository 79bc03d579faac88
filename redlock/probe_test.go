package redlock_test

import (
	"context"
	"slices"
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

// setLog records the SETs that reach the nodes wrapped by logNodes, in
// order, and makes the next SET of a node find another's key there first
// when asked to (steal): whatever the node held is replaced by "another".
type setLog struct {
	mu    sync.Mutex
	sets  []int // node index, in the order the SETs reached the nodes
	steal []atomic.Bool
}

func (l *setLog) take() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sets
	l.sets = nil
	return s
}

// loggedNode is a memory node whose SETs setLog records.
type loggedNode struct {
	*memory.Node
	i   int
	log *setLog
}

func (n loggedNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.log.mu.Lock()
	n.log.sets = append(n.log.sets, n.i)
	n.log.mu.Unlock()
	if n.log.steal[n.i].CompareAndSwap(true, false) {
		n.Node.Delete(key)
		_, _ = n.Node.SetNX(ctx, key, "another", time.Hour)
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// logNodes wraps mem in loggedNodes that share one setLog.
func logNodes(mem []*memory.Node) ([]driver.Node, *setLog) {
	log := &setLog{steal: make([]atomic.Bool, len(mem))}
	nodes := make([]driver.Node, len(mem))
	for i, m := range mem {
		nodes[i] = loggedNode{Node: m, i: i, log: log}
	}
	return nodes, log
}

// Clients that list the nodes in another order pick the same arbiter for a
// key, and the keys spread over every node; with fewer than three nodes
// there is none.
func TestArbiterSameForEveryClient(t *testing.T) {
	mem, nodes := memNodes(5)
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	c1, c2 := newClient(t, nodes), newClient(t, reversed)
	seen := map[*memory.Node]bool{}
	for i := range 100 {
		key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		a1, a2 := redlock.Arbiter(c1, key), redlock.Arbiter(c2, key)
		require.GreaterOrEqual(t, a1, 0)
		require.Same(t, mem[a1], reversed[a2], "key %s", key)
		seen[mem[a1]] = true
	}
	require.Len(t, seen, 5, "the keys' arbiters")
	_, two := memNodes(2)
	require.Equal(t, -1, redlock.Arbiter(newClient(t, two), "k"))
}

// An attempt that probes the arbiter and is refused there sends nothing to
// the other nodes, and says why; the probe is only a hint: a full attempt
// gets the lock from the other four.
func TestProbeRefusedAsksNoOtherNode(t *testing.T) {
	ctx := t.Context()
	mem, _ := memNodes(5)
	nodes, log := logNodes(mem)
	c := newClient(t, nodes)
	arb := redlock.Arbiter(c, "k")
	ok, err := mem[arb].SetNX(ctx, "k", "another", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)

	_, err = redlock.TryLockProbe(c, ctx, "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var ve *redlock.VoteError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, redlock.VoteError{Refused: 1, Needed: 3, Nodes: 5}, *ve)
	require.Equal(t, []int{arb}, log.take(), "the SETs sent")
	require.Equal(t, 1, holders(mem, "k"))

	l, err := redlock.TryLockCore(c, ctx, "k")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return holders(mem, "k") == 5 }, 5*time.Second, time.Millisecond,
		"another's key on the arbiter, the lock's on the others")
	require.NoError(t, redlock.UnlockCore(l, ctx))
}

// A probe that the arbiter granted goes on to the other nodes, and the
// lock's validity is counted from before the probe.
func TestProbeGrantedValidityFromProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl = 10 * time.Second
		mem, _ := memNodes(5)
		for _, m := range mem {
			m.SetLatency(time.Millisecond)
		}
		nodes, log := logNodes(mem)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		t0 := time.Now()
		l, err := redlock.TryLockProbe(c, ctx, "k")
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(t0), 2*time.Millisecond, "the probe, then the others")
		require.Equal(t, t0.Add(ttl-redlock.Drift(ttl, redlock.DefaultDriftFactor)), l.Until())
		synctest.Wait() // the SETs after the quorum's
		sets := log.take()
		require.Len(t, sets, 5)
		require.Equal(t, arb, sets[0], "the arbiter's SET first")
		require.ElementsMatch(t, []int{0, 1, 2, 3, 4}, sets)
		require.Equal(t, 5, holders(mem, "k"))
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, c.Close())
	})
}

// An arbiter that does not answer the probe is a failed node of the
// attempt, which goes on to the others: a quorum of them grants the lock,
// its validity counted from before the probe.
func TestProbeFailedArbiterGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const ttl, nodeTimeout = 10 * time.Second, 50 * time.Millisecond
		mem, nodes := memNodes(5)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		mem[arb].SetStalled(true)
		t0 := time.Now()
		l, err := redlock.TryLockProbe(c, ctx, "k")
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(t0), nodeTimeout, "the probe's node timeout, then the others")
		require.Equal(t, t0.Add(ttl-redlock.Drift(ttl, redlock.DefaultDriftFactor)), l.Until())
		synctest.Wait()
		require.Equal(t, 4, holders(mem, "k"))
		mem[arb].SetStalled(false)
		require.NoError(t, l.Unlock(ctx))
		require.NoError(t, c.Close())
	})
}

// A waiter whose attempt, woken by a release, found the key taken by
// another on every node probes the arbiter first from then on, woken by the
// arbiter's release alone; and when its last allowed attempt is a probe the
// arbiter refused, Lock's error is the verdict of the last full attempt.
func TestLockProbesAfterLostRace(t *testing.T) {
	for _, capped := range []bool{false, true} {
		t.Run(map[bool]string{false: "granted", true: "capped"}[capped], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { lockProbesAfterLostRace(t, capped) })
		})
	}
}

func lockProbesAfterLostRace(t *testing.T, capped bool) {
	ctx := context.Background()
	opts := []redlock.Option{redlock.WithBackoff(redlock.ConstantBackoff(time.Hour))}
	if capped {
		// 1: refused; 2: at once, once subscribed; 3: woken, refused
		// everywhere; 4: a probe.
		opts = append(opts, redlock.WithMaxAttempts(4))
	}
	s := newRaceScene(t, nil, opts...)
	c, log, arb, done := s.c, s.log, s.arb, s.done
	synctest.Wait()
	log.take()

	// The waiter's wake at this release finds another's key on every
	// node: it lost the race.
	s.release(t, "held", -1, true)
	synctest.Wait()
	require.Subset(t, log.take(), []int{0, 1, 2, 3, 4}, "the woken attempt's SETs")

	// The other nodes' releases do not wake it; the arbiter's does, and
	// it probes there first.
	s.release(t, "another", arb, false)
	synctest.Wait()
	select {
	case <-done: // its probe at the arbiter's first release was its last attempt
		require.True(t, capped, "Lock returned: %v", s.err)
	default:
		require.Empty(t, log.take(), "SETs sent on the other nodes' releases")
		if capped {
			log.steal[arb].Store(true)
		}
		_, err := s.mem[arb].ReleaseNotify(ctx, "k", "another")
		require.NoError(t, err)
		<-done
	}
	l, errL := s.l, s.err
	if capped {
		require.Nil(t, l)
		require.ErrorIs(t, errL, redlock.ErrNotObtained)
		var ve *redlock.VoteError
		require.ErrorAs(t, errL, &ve)
		// A full attempt's verdict is decided by three refusals at
		// least; the probe's would be one.
		require.GreaterOrEqual(t, ve.Refused, 3, "the verdict of the last full attempt: %v", errL)
	} else {
		require.NoError(t, errL)
		synctest.Wait() // the SETs after the quorum's
		sets := log.take()
		require.Len(t, sets, 5)
		require.Equal(t, arb, sets[0], "the arbiter's SET first")
		require.NoError(t, l.Unlock(ctx))
	}
	require.NoError(t, c.Close())
}
