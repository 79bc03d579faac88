package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// A waiter that probes the arbiter (its woken attempt lost the race for the
// key) still hears the other nodes' releases when the arbiter publishes
// none: here the holder's release failed on the arbiter, whose key stays
// there, while the four others published theirs and a quorum is free. The
// waiter gets the lock then, not at its next poll (an hour away), as it did
// before the probe existed.
func TestProbeWaiterHearsOthersWhenArbiterSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, _ := memNodes(5)
		nodes, log := logNodes(mem)
		c, err := redlock.New(nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		for _, m := range mem { // another Client holds the lock
			_, err := m.SetNX(ctx, "k", "held", time.Hour)
			require.NoError(t, err)
		}
		var (
			l    *redlock.Lock
			errL error
			done = make(chan struct{})
		)
		go func() {
			defer close(done)
			l, errL = c.Lock(ctx, "k")
		}()
		synctest.Wait()

		// The waiter's wake at this release finds another's key on every
		// node: it lost the race, and probes from now on.
		for i := range mem {
			log.steal[i].Store(true)
		}
		for _, m := range mem {
			_, err := m.ReleaseNotify(ctx, "k", "held")
			require.NoError(t, err)
		}
		synctest.Wait()

		// The winner unlocks; its release fails on the arbiter (a node
		// timeout, say): four nodes publish it, and free a quorum.
		for i, m := range mem {
			if i != arb {
				_, err := m.ReleaseNotify(ctx, "k", "another")
				require.NoError(t, err)
			}
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
		}
		select {
		case <-done:
			require.NoError(t, errL)
			require.NoError(t, l.Unlock(ctx))
		default:
			t.Errorf("Lock still waits a minute after a quorum of nodes announced the release (only the arbiter, which kept the old key, did not)")
		}
		require.NoError(t, c.Close())
		<-done
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
		ctx := context.Background()
		const nodeTimeout = time.Second
		mem, _ := memNodes(5)
		nodes, log := logNodes(mem)
		c, err := redlock.New(nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithNodeTimeout(nodeTimeout))
		require.NoError(t, err)
		arb := redlock.Arbiter(c, "k")
		for _, m := range mem { // another Client holds the lock
			_, err := m.SetNX(ctx, "k", "held", time.Hour)
			require.NoError(t, err)
		}
		mem[arb].SetStalled(true) // answers nothing from now on
		var (
			l    *redlock.Lock
			errL error
			done = make(chan struct{})
		)
		go func() {
			defer close(done)
			l, errL = c.Lock(ctx, "k")
		}()
		time.Sleep(2 * nodeTimeout) // the first attempts, and the subscription on the arbiter, time out there
		synctest.Wait()

		// The waiter's wake at this release finds another's key on every
		// node that answers: it lost the race.
		for i := range mem {
			if i != arb {
				log.steal[i].Store(true)
			}
		}
		for i, m := range mem {
			if i != arb {
				_, err := m.ReleaseNotify(ctx, "k", "held")
				require.NoError(t, err)
			}
		}
		synctest.Wait() // within splitMemory (a second) of the lost race

		// The winner unlocks (its release times out on the arbiter).
		t0 := time.Now()
		for i, m := range mem {
			if i != arb {
				_, err := m.ReleaseNotify(ctx, "k", "another")
				require.NoError(t, err)
			}
		}
		<-done
		require.NoError(t, errL)
		require.Less(t, time.Since(t0), nodeTimeout/2, "from the release to the grant")
		require.NoError(t, l.Unlock(ctx))
		mem[arb].SetStalled(false)
		require.NoError(t, c.Close())
	})
}
