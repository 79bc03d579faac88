package redlock_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/internal/syncbuf"
	"github.com/go-redlock/redlock/redlock"
)

// count returns how many events of r's log are ev.
func (r *recorder) count(ev string) int {
	n := 0
	for _, e := range r.snapshot() {
		if e == ev {
			n++
		}
	}
	return n
}

// dosDone returns the DoDone events r saw.
func (r *recorder) dosDone() []redlock.DoDone {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]redlock.DoDone(nil), r.dos...)
}

// panicLockEndObs panics in the end of every Lock.
type panicLockEndObs struct{ redlock.NopObserver }

func (panicLockEndObs) Lock(ctx context.Context, _ redlock.LockStart) (context.Context, func(redlock.LockDone)) {
	return ctx, func(redlock.LockDone) { panic("broken Lock end") }
}

// panicUnlockStartObs panics when an Unlock starts.
type panicUnlockStartObs struct{ redlock.NopObserver }

func (panicUnlockStartObs) Unlock(context.Context, redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	panic("broken Unlock start")
}

// panicAttemptStartObs panics when an attempt starts.
type panicAttemptStartObs struct{ redlock.NopObserver }

func (panicAttemptStartObs) Attempt(context.Context, redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	panic("broken Attempt start")
}

// A Do that does not return (its function panics or calls runtime.Goexit,
// or another observer panics in its Lock's end or its Unlock's start) has
// its end reported all the same, once, after its lock is released.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestDoEndReportedWhenDoDoesNotReturn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other redlock.Observer // nil: none
		fn    func(context.Context) error
	}{
		{"fn panics", nil, func(context.Context) error { panic("boom") }},
		{"fn calls Goexit", nil, func(context.Context) error { runtime.Goexit(); return nil }},
		{"Lock's end panics", panicLockEndObs{}, func(context.Context) error { return nil }},
		{"Unlock's start panics", panicUnlockStartObs{}, func(context.Context) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				r := &recorder{id: "r"}
				opts := []redlock.Option{redlock.WithObserver(r)}
				if tc.other != nil {
					opts = append(opts, redlock.WithObserver(tc.other))
				}
				c := newClient(t, nodes, opts...)
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer func() { _ = recover() }()
					_ = c.Do(t.Context(), "k", tc.fn)
				}()
				<-done
				assert.Equal(t, 1, r.count("start /do"))
				assert.Equal(t, 1, r.count("end /do"), "the Do's end, once: %v", r.snapshot())
				dos := r.dosDone()
				require.Len(t, dos, 1)
				assert.Error(t, dos[0].Err, "a Do that did not return has an error")
				assert.False(t, dos[0].Lost)
				assert.Equal(t, "k", dos[0].Key)
				assert.Eventually(t, func() bool { return holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond, "the lock is released")
			})
		})
	}
}

// When an observer's start panics, the observers started before it see
// their ends, with an error; the panic goes on to the caller.
func TestStartPanicEndsTheObserversBefore(t *testing.T) {
	_, nodes := memNodes(3)
	r := &recorder{id: "r"}
	c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithObserver(panicAttemptStartObs{}))
	var pv any
	func() {
		defer func() { pv = recover() }()
		_, _ = c.TryLock(t.Context(), "k")
	}()
	assert.Equal(t, "broken Attempt start", pv, "the panic goes on to the caller")
	assert.Equal(t, []string{"start /attempt", "end /attempt"}, r.snapshot())
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.attempts, 1)
	assert.Equal(t, redlock.OutcomeError, r.attempts[0].Outcome)
	assert.Error(t, r.attempts[0].Err)
}

// A lock whose validity passed before Unlock, unnoticed (Done never called),
// is reported expired, though the release then found the key on the nodes.
func TestUnlockAfterValidityReportsExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		r := &recorder{id: "r"}
		// A drift allowance of half the TTL: the nodes still hold the key
		// a while after Until.
		c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithTTL(time.Second), redlock.WithDriftFactor(0.5))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		time.Sleep(time.Until(l.Until()) + 10*time.Millisecond)
		require.NoError(t, l.Unlock(t.Context()), "the key was still there to release")
		ends := r.lockEnds()
		require.Len(t, ends, 1)
		assert.Equal(t, redlock.EndExpired, ends[0].How)
	})
}

// An Unlock that no quorum confirmed, because the nodes failed rather than
// said no, returns ErrLockLost, and its LockEnd is a loss too; so is a Do's
// whose Client was closed while its function ran.
// Each runs in a bubble (testing/synctest): a 100 ms node timeout on the real
// clock is a margin a loaded machine can pass, failing the acquisition.
func TestUnconfirmedUnlockReportsLoss(t *testing.T) {
	t.Run("nodes down", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem, nodes := memNodes(3)
			r := &recorder{id: "r"}
			c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithNodeTimeout(100*time.Millisecond))
			l, err := c.TryLock(t.Context(), "k")
			require.NoError(t, err)
			mem[0].SetDown(true)
			mem[1].SetDown(true)
			err = l.Unlock(t.Context())
			require.ErrorIs(t, err, redlock.ErrLockLost)
			ends := r.lockEnds()
			require.Len(t, ends, 1)
			assert.Equal(t, redlock.EndLostUnlock, ends[0].How)
		})
	})
	t.Run("Close during Do", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The nodes' Close waits for gate: Do's Unlock, which Close's
			// cancel lets run, finds them open, and releases the key.
			gate := make(chan struct{})
			nodes := make([]driver.Node, 3)
			for i := range nodes {
				nodes[i] = &gatedNode{memory.New(), gate}
			}
			r := &recorder{id: "r"}
			c, err := redlock.New(nodes, redlock.WithObserver(r), redlock.WithNodeTimeout(100*time.Millisecond))
			require.NoError(t, err)
			started := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				errc <- c.Do(t.Context(), "k", func(ctx context.Context) error {
					close(started)
					<-ctx.Done()
					return nil
				})
			}()
			<-started
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			doErr := <-errc
			close(gate)
			require.NoError(t, <-closed)
			require.ErrorIs(t, doErr, redlock.ErrLockLost)
			dos := r.dosDone()
			require.Len(t, dos, 1)
			assert.True(t, dos[0].Lost)
			ends := r.lockEnds()
			require.Len(t, ends, 1)
			assert.Equal(t, redlock.EndClosed, ends[0].How, "a lock that Close gave up is a loss")
			assert.ErrorIs(t, ends[0].Err, redlock.ErrClosed, "LockEnd.Err says why: Close")
		})
	})
}

// gatedNode's Close waits for gate.
type gatedNode struct {
	*memory.Node
	gate chan struct{}
}

func (n *gatedNode) Close() error { <-n.gate; return n.Node.Close() }

// sleepUnlockStart sleeps when an Unlock starts.
type sleepUnlockStart struct {
	redlock.NopObserver
	d time.Duration
}

func (o sleepUnlockStart) Unlock(ctx context.Context, _ redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	time.Sleep(o.d)
	return ctx, nil
}

// A Do whose lock's validity passes after its function returned but before
// its Unlock began (here, in an observer's Unlock start) is lost, as its
// LockEnd ("expired") says.
func TestDoLostWhenValidityPassesBeforeUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		r := &recorder{id: "r"}
		// Past Until (half the TTL, with this drift factor), but not past
		// the TTL: the release finds the key on the nodes.
		c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithObserver(sleepUnlockStart{d: 7 * time.Second}),
			redlock.WithTTL(10*time.Second), redlock.WithDriftFactor(0.5), redlock.WithExtendInterval(4*time.Second))
		err := c.Do(t.Context(), "k", func(context.Context) error { return nil })
		assert.ErrorIs(t, err, redlock.ErrLockLost)
		dos := r.dosDone()
		require.Len(t, dos, 1)
		ends := r.lockEnds()
		require.Len(t, ends, 1)
		assert.Equal(t, redlock.EndExpired, ends[0].How)
		assert.True(t, dos[0].Lost, "DoDone.Lost agrees with LockEnd")
	})
}

// An observer's start that panics in Do's first attempt (on a Client's
// goroutine) leaves no start of the Do's without its end.
func TestDoFirstAttemptStartPanicEnds(t *testing.T) {
	_, nodes := memNodes(3)
	r := &recorder{id: "r"}
	c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithObserver(panicAttemptStartObs{}))
	var pv any
	func() {
		defer func() { pv = recover() }()
		_ = c.Do(t.Context(), "k", func(context.Context) error { return nil })
	}()
	assert.Equal(t, "broken Attempt start", pv)
	for _, scope := range []string{"/do", "/do/lock", "/do/lock/attempt"} {
		assert.Equal(t, 1, r.count("end "+scope), "%s: %v", scope, r.snapshot())
	}
}

// panicLockEndEvent panics in LockEnd.
type panicLockEndEvent struct{ redlock.NopObserver }

func (panicLockEndEvent) LockEnd(context.Context, redlock.LockEnd) { panic("broken LockEnd") }

// Another observer's LockEnd that panics in Unlock or Extend, on the caller's
// goroutine, leaves no Unlock or Extend start without its end.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestLockEndPanicEndsUnlockAndExtend(t *testing.T) {
	for _, op := range []string{"unlock", "extend"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes := memNodes(3)
				r := &recorder{id: "r"}
				c := newClient(t, nodes, redlock.WithObserver(r), redlock.WithObserver(panicLockEndEvent{}))
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				var pv any
				func() {
					defer func() { pv = recover() }()
					if op == "unlock" {
						_ = l.Unlock(t.Context())
						return
					}
					for _, m := range mem {
						m.Delete("k") // the Extend finds the lock lost: a LockEnd
					}
					_ = l.Extend(t.Context(), time.Second)
				}()
				assert.Equal(t, "broken LockEnd", pv)
				assert.Equal(t, 1, r.count("end /"+op), "%v", r.snapshot())
			})
		})
	}
}

// An Extend after the holder's own Unlock says so (ErrAlreadyUnlocked,
// beside ErrLockLost, as TTL), and the logger does not warn of it.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestExtendAfterUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		var buf syncbuf.Buffer
		lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c := newClient(t, nodes, redlock.WithLogger(lg))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		err = l.Extend(t.Context(), time.Second)
		assert.ErrorIs(t, err, redlock.ErrAlreadyUnlocked)
		assert.ErrorIs(t, err, redlock.ErrLockLost)
		assert.Empty(t, buf.String(), "no warning for an Extend after the holder's Unlock")
	})
}

// extendTimes records, for the Extends of Do's keeper, when each started
// and, for the calls to one node, the time between the Extend's start and
// the reply that NodeCall.Duration leaves out.
type extendTimes struct {
	redlock.NopObserver
	node    string
	mu      sync.Mutex
	started map[string]time.Time // by key: the start of its Extend in flight
	left    []time.Duration      // by call: reply - start - Duration
	durs    []time.Duration      // by call: Duration
	errs    []error
}

func (o *extendTimes) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	o.mu.Lock()
	o.started[e.Key] = time.Now()
	o.mu.Unlock()
	return ctx, nil
}

func (o *extendTimes) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation != redlock.OpExtend || e.Node != o.node {
		return
	}
	o.mu.Lock()
	o.left = append(o.left, time.Since(o.started[e.Key])-e.Duration)
	o.errs = append(o.errs, e.Err)
	o.durs = append(o.durs, e.Duration)
	o.mu.Unlock()
}

// The keeper's node calls are reported with their whole time as the Client
// sees it, its own queueing included (more locks than goroutines per node
// make their calls wait their turn), and the calls it does not send (to a
// node that stalled) are not reported as calls.
func TestKeeperNodeCallDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		obs := &extendTimes{node: fmt.Sprint(nodes[2]), started: map[string]time.Time{}}
		c := newClient(t, nodes, redlock.WithObserver(obs), redlock.WithTTL(3*time.Second),
			redlock.WithExtendInterval(time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
		const locks = 256 // four times the keeper's goroutines per node
		release := make(chan struct{})
		var held, wg sync.WaitGroup
		held.Add(locks)
		for i := range locks {
			wg.Go(func() {
				_ = c.Do(t.Context(), fmt.Sprint("q", i), func(context.Context) error {
					held.Done()
					<-release
					return nil
				})
			})
		}
		held.Wait()
		mem[2].SetLatency(40 * time.Millisecond)
		time.Sleep(1500 * time.Millisecond) // one extension of every lock
		obs.mu.Lock()
		require.Len(t, obs.left, locks, "one extension call per lock to the slow node")
		for i, d := range obs.left {
			require.NoError(t, obs.errs[i])
			require.Zero(t, d, "call %d: time left out of NodeCall.Duration", i)
		}
		obs.left, obs.errs, obs.durs = nil, nil, nil
		obs.mu.Unlock()

		// Stalled: the first calls time out, and the others are not sent.
		// The next extensions begin at 2s and their calls time out at 2.5s:
		// looked at 1.25s from now, not at that same instant, when the
		// reports and this goroutine's wake run in either order.
		mem[2].SetLatency(time.Hour)
		time.Sleep(time.Second + time.Second/4)
		obs.mu.Lock()
		n := len(obs.left)
		for i, err := range obs.errs {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.GreaterOrEqual(t, obs.durs[i], 500*time.Millisecond, "call %d: it waited for the node timeout", i)
			require.NotContains(t, err.Error(), "not sent", "call %d: only calls sent are reported", i)
		}
		obs.mu.Unlock()
		assert.Positive(t, n)
		mem[2].SetLatency(0)
		close(release)
		wg.Wait()
	})
}

// An Extend whose context had ended (a deadline passed) sent nothing and
// changed nothing: the logger does not warn of it.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestExtendNotSentIsNotWarned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		var buf syncbuf.Buffer
		lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		c := newClient(t, nodes, redlock.WithLogger(lg))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		ended, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		require.ErrorIs(t, l.Extend(ended, time.Second), context.DeadlineExceeded)
		assert.Empty(t, buf.String())
	})
}
