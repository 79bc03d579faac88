package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// raceScene is a Client's Lock of key "k" on five memory nodes held by
// another Client ("held"), waiting in the background: the scene of a race
// for the key between Clients.
type raceScene struct {
	mem  []*memory.Node
	log  *setLog
	c    *redlock.Client
	arb  int // the key's arbiter
	l    *redlock.Lock
	err  error
	done chan struct{} // closed when Lock returned l, err
}

// newRaceScene sets the scene, with opts for the Client; before runs
// between the holder's SETs and the start of Lock, if not nil.
func newRaceScene(t *testing.T, before func(s *raceScene), opts ...redlock.Option) *raceScene {
	ctx := context.Background()
	s := &raceScene{done: make(chan struct{})}
	var nodes []driver.Node
	s.mem, _ = memNodes(5)
	nodes, s.log = logNodes(s.mem)
	var err error
	s.c, err = redlock.New(nodes, opts...)
	require.NoError(t, err)
	s.arb = redlock.Arbiter(s.c, "k")
	for _, m := range s.mem { // another Client holds the lock
		_, err := m.SetNX(ctx, "k", "held", time.Hour)
		require.NoError(t, err)
	}
	if before != nil {
		before(s)
	}
	go func() {
		defer close(s.done)
		s.l, s.err = s.c.Lock(ctx, "k")
	}()
	return s
}

// release releases value on every node but skip (-1: none), publishing it;
// with steal, the next SET of each of those nodes finds "another"'s key
// there first (a waiter of another Client won the race).
//
// Every steal is armed before the first release: a waiter woken by the
// first notice may SET on the other nodes before their release.
func (s *raceScene) release(t *testing.T, value string, skip int, steal bool) {
	for i := range s.mem {
		if steal && i != skip {
			s.log.steal[i].Store(true)
		}
	}
	for i, m := range s.mem {
		if i != skip {
			_, err := m.ReleaseNotify(context.Background(), "k", value)
			require.NoError(t, err)
		}
	}
}

// A waiter that probes the arbiter (its woken attempt lost the race for the
// key) still hears the other nodes' releases when the arbiter publishes
// none: here the holder's release failed on the arbiter, whose key stays
// there, while the four others published theirs and a quorum is free. The
// waiter gets the lock then, not at its next poll (an hour away), as it did
// before the probe existed.
func TestProbeWaiterHearsOthersWhenArbiterSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRaceScene(t, nil, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
		synctest.Wait()
		// The waiter's wake at this release finds another's key on every
		// node: it lost the race, and probes from now on.
		s.release(t, "held", -1, true)
		synctest.Wait()

		// The winner unlocks; its release fails on the arbiter (a node
		// timeout, say): four nodes publish it, and free a quorum.
		s.release(t, "another", s.arb, false)
		select {
		case <-s.done:
		case <-time.After(time.Minute):
		}
		select {
		case <-s.done:
			require.NoError(t, s.err)
			require.NoError(t, s.l.Unlock(context.Background()))
		default:
			t.Errorf("Lock still waits a minute after a quorum of nodes announced the release (only the arbiter, which kept the old key, did not)")
		}
		require.NoError(t, s.c.Close())
		<-s.done
	})
}

// blockArbiter is an observer whose NodeCall for the first acquisition SET
// on node name blocks until release is closed.
type blockArbiter struct {
	redlock.NopObserver
	name    string
	entered chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func (b *blockArbiter) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation == redlock.OpAcquire && e.Node == b.name && b.once.CompareAndSwap(false, true) {
		close(b.entered)
		<-b.release
	}
}

// Close waits for an attempt whose probe the arbiter granted, as it waits
// for the calls of any round: it does not close the nodes between the probe
// and the SETs to the others, which would leave the probe's key on the
// arbiter, never released (the attempt's release there fails on the closed
// node).
func TestCloseWaitsForProbedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, nodes := memNodes(5)
		obs := &blockArbiter{entered: make(chan struct{}), release: make(chan struct{})}
		c, err := redlock.New(nodes, redlock.WithObserver(obs), redlock.WithNodeTimeout(time.Second))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		obs.name = mem[arb].String() // before the first call

		var (
			l    *redlock.Lock
			errL error
			done = make(chan struct{})
		)
		go func() {
			defer close(done)
			l, errL = redlock.TryLockProbe(c, ctx, "k")
		}()
		<-obs.entered // the arbiter granted the probe
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_ = c.Close()
		}()
		synctest.Wait()
		closedEarly := false
		select {
		case <-closed:
			closedEarly = true
		default:
		}
		close(obs.release)
		<-done
		<-closed
		synctest.Wait()
		if errL != nil {
			require.Zero(t, holders(mem, "k"), "keys left after the attempt failed: %v", errL)
		}
		require.False(t, closedEarly, "Close returned while the probed attempt was under way (attempt: lock %v, %v; holders after: %d)", l != nil, errL, holders(mem, "k"))
	})
}

// A waiter whose own SET of an earlier attempt is still unanswered on the
// arbiter (a node that answers nothing) does not probe it: such a probe
// would cost a node timeout before the SETs to the others, at every
// hand-off while the race for the key lasts. Here the woken attempt after a
// lost race gets the lock from the other four at once, as before the probe
// existed. (Regression check: this held before the review.)
func TestProbeSkipsUnheardArbiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = time.Second
		s := newRaceScene(t, func(s *raceScene) {
			s.mem[s.arb].SetStalled(true) // answers nothing from now on
		}, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithNodeTimeout(nodeTimeout))
		time.Sleep(2 * nodeTimeout) // the first attempts, and the subscription on the arbiter, time out there
		synctest.Wait()
		// The waiter's wake at this release finds another's key on every
		// node that answers: it lost the race.
		s.release(t, "held", s.arb, true)
		synctest.Wait() // within splitMemory (a second) of the lost race

		// The winner unlocks (its release times out on the arbiter), all
		// at once for the waiter: it is woken by the last node's notice,
		// when the others are free already. (A waiter woken by the first
		// node's, its attempt refused by nodes not released yet, would
		// wait for its own SET on the arbiter, which may have set a key of
		// its: a node timeout, whether it probes or not.)
		t0 := time.Now()
		last := (s.arb + 1) % len(s.mem)
		for i, m := range s.mem {
			if i != s.arb && i != last {
				require.True(t, m.Delete("k"))
			}
		}
		_, err := s.mem[last].ReleaseNotify(context.Background(), "k", "another")
		require.NoError(t, err)
		<-s.done
		require.NoError(t, s.err)
		require.Less(t, time.Since(t0), nodeTimeout/2, "from the release to the grant")
		require.NoError(t, s.l.Unlock(context.Background()))
		s.mem[s.arb].SetStalled(false)
		require.NoError(t, s.c.Close())
	})
}

// A probe whose context ends while the arbiter holds its SET (a stalled
// server, which applies it once it resumes) leaves no key behind: the
// attempt releases it there in the background, after the SET, and sends
// the others nothing that stays. (Regression check: this held before the
// review.)
func TestProbeCtxEndedLeavesNoKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = time.Second
		mem, nodes := memNodes(5)
		// A TTL far longer than the test's time: no key expires.
		c, err := redlock.New(nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(time.Hour))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		mem[arb].SetStalled(true)
		ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout/10)
		defer cancel()
		_, err = redlock.TryLockProbe(c, ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		time.Sleep(nodeTimeout)
		// The held SET; a release held after it, or sent later.
		mem[arb].SetStalled(false)
		synctest.Wait()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Zero(t, holders(mem, "k"))
		require.NoError(t, c.Close())
	})
}
