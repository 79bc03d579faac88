package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// shortTTL keeps tests quick; the node timeout is generous, since calls to
// in-process nodes can still wait long for a CPU on a loaded CI machine.
//
// The tests of this file that call nodes run in a bubble (testing/synctest),
// whose clock moves only when every goroutine in it waits: on the real clock
// a machine that stalls the test past the node timeout (200ms by default,
// 500ms with shortTTL) fails a live node's call, and with it an acquisition
// or a release the test needs, and the waits for Done to close (or not)
// compared real times that a stalled timer can pass.
var shortTTL = []redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500 * time.Millisecond)}

func TestDoneClosesAtValidityEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, shortTTL...)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		done := l.Done()
		require.True(t, closedWithin(done, 5*time.Second), "Done must close when the validity ends")
		closedAt := time.Now()
		assert.False(t, closedAt.Before(l.Until()), "Done closed %v before Until", l.Until().Sub(closedAt))
		assert.Less(t, closedAt.Sub(l.Until()), time.Second, "Done must close promptly after Until")
		assert.True(t, isClosed(l.Done()), "Done stays closed")
	})
}

func TestDoneFollowsExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, shortTTL...)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		done := l.Done()
		require.NoError(t, l.Extend(t.Context(), time.Minute))
		assert.False(t, closedWithin(done, 1500*time.Millisecond), "Done closed at the old Until after a successful Extend")
		require.NoError(t, l.Unlock(t.Context()))
		assert.True(t, isClosed(done), "Unlock closes Done")
	})
}

func TestDoneClosesOnLostExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c := newClient(t, nodes)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "k"))
		done := l.Done()

		mem[0].SetDown(true) // failures alone do not prove the lock lost
		mem[1].SetDown(true)
		mem[2].SetDown(true)
		require.ErrorIs(t, l.Extend(t.Context(), time.Minute), redlock.ErrLockLost)
		assert.False(t, isClosed(done), "an Extend that could not reach a quorum has not found the lock lost")
		for _, m := range mem[:3] {
			m.SetDown(false)
			m.Delete("k")
		}
		require.ErrorIs(t, l.Extend(t.Context(), time.Minute), redlock.ErrLockLost)
		assert.True(t, isClosed(done), "an Extend that found the lock gone on a majority closes Done")
	})
}

func TestDoneLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c, err := redlock.New(nodes, shortTTL...)
		require.NoError(t, err)
		defer c.Close()
		var dones []<-chan struct{}
		for i := range 50 {
			l, err := c.TryLock(t.Context(), fmt.Sprint("k", i))
			require.NoError(t, err)
			dones = append(dones, l.Done())
			if i%2 == 0 {
				require.NoError(t, l.Unlock(t.Context()))
			}
		}
		for _, d := range dones {
			require.True(t, closedWithin(d, 5*time.Second))
		}
	})
}

// Do keeps its lock through work four TTLs long: a rival never gets it
// meanwhile, and gets it once fn returns. In a bubble (fake clock): in real
// time, a loaded machine running -race paused the extender past the TTL.
func TestDoExtendsThroughLongWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		for _, m := range mem {
			m.SetLatency(time.Millisecond)
		}
		const ttl = 500 * time.Millisecond
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond))
		rival := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond))
		attempts := 0
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			end := time.Now().Add(4 * ttl)
			for time.Now().Before(end) {
				if ctx.Err() != nil {
					return fmt.Errorf("fn canceled while the lock was kept: %w", context.Cause(ctx))
				}
				_, err := rival.TryLock(t.Context(), "k")
				if !errors.Is(err, redlock.ErrNotObtained) {
					return fmt.Errorf("a rival got the lock during Do: %v", err)
				}
				attempts++
				time.Sleep(10 * time.Millisecond)
			}
			return nil
		})
		require.NoError(t, err)
		assert.Greater(t, attempts, 10)
		l, err := rival.TryLock(t.Context(), "k")
		require.NoError(t, err, "Do unlocks when fn returns")
		require.NoError(t, l.Unlock(t.Context()))
	})
}

func TestDoCancelsWhenLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500*time.Millisecond), redlock.WithExtendInterval(50*time.Millisecond))
		errWork := errors.New("work interrupted")
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			for _, m := range mem {
				m.Delete("k") // evicted, expired early, or a restarted node
			}
			select {
			case <-ctx.Done():
				assert.ErrorIs(t, context.Cause(ctx), redlock.ErrLockLost)
				return errWork
			case <-time.After(5 * time.Second):
				return errors.New("fn's context was not canceled")
			}
		})
		require.ErrorIs(t, err, errWork)
		require.ErrorIs(t, err, redlock.ErrLockLost)
	})
}

func TestDoReturnsFnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes)
		errFn := errors.New("fn failed")
		require.Equal(t, errFn, c.Do(t.Context(), "k", func(context.Context) error { return errFn }))
		require.ErrorContains(t, c.Do(t.Context(), "k", nil), "nil function")
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err, "Do released the lock")
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		ran := false
		err = c.Do(ctx, "k", func(context.Context) error { ran = true; return nil })
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.False(t, ran, "fn must not run without the lock")
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// A waiter wakes on the holder's release, not on its polling delay.
// It runs in a bubble (testing/synctest): its 50 ms sleep lets the waiter
// fail and subscribe on any machine, not only on one that runs it in time.
func TestHandOffWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		slowPoll := redlock.WithBackoff(redlock.ConstantBackoff(time.Minute))
		holder := newClient(t, nodes)
		waiter := newClient(t, nodes, slowPoll)
		l, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			l, err := waiter.Lock(t.Context(), "k")
			if err == nil {
				err = l.Unlock(t.Context())
			}
			got <- err
		}()
		time.Sleep(50 * time.Millisecond) // let the waiter fail and subscribe
		require.NoError(t, l.Unlock(t.Context()))
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter did not get the released lock: it must be woken by the release, not by its one-minute poll")
		}
	})
}

// opaque hides a node's optional interfaces.
type opaque struct{ driver.Node }

func TestFencingNeedsFencers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := redlock.New([]driver.Node{memory.New(), opaque{memory.New()}, memory.New()}, redlock.WithFencing())
		require.ErrorContains(t, err, "does not keep fencing counters")
		c, err := redlock.New([]driver.Node{opaque{memory.New()}}) // without fencing, and without notifications
		require.NoError(t, err)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.Zero(t, l.Token(), "no fencing, no token")
		require.NoError(t, l.Unlock(t.Context()))
	})
}

func TestFencingTokensRise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		mem, nodes := memNodes(5)
		a := newClient(t, nodes, redlock.WithFencing())
		b := newClient(t, []driver.Node{nodes[4], nodes[3], nodes[2], nodes[1], nodes[0]}, redlock.WithFencing())
		var last uint64
		grant := func(c *redlock.Client, why string) {
			t.Helper()
			l, err := c.TryLock(ctx, "k")
			require.NoError(t, err, why)
			require.Greater(t, l.Token(), last, "%s: tokens must rise with every grant", why)
			last = l.Token()
			require.NoError(t, l.Unlock(ctx))
			// Unlock returns on a quorum; let the last releases land.
			synctest.Wait()
			require.Zero(t, holders(mem, "k"))
		}
		grant(a, "first grant")
		require.EqualValues(t, 1, last)
		grant(b, "another client")
		grant(a, "back to the first")
		// Shifting quorums: each grant sees a different two nodes down.
		for i := range 10 {
			down := []int{i % 5, (i + 2) % 5}
			for _, d := range down {
				mem[d].SetDown(true)
			}
			grant([]*redlock.Client{a, b}[i%2], fmt.Sprintf("nodes %v down", down))
			for _, d := range down {
				mem[d].SetDown(false)
			}
		}
		require.EqualValues(t, 13, last, "one more per grant")
	})
}

// It runs in a bubble (testing/synctest): the fake clock is the nodes' and
// the Client's for validity, but the calls' 100 ms node timeout (TTL 1s) is on
// the real clock, a margin a loaded machine can pass.
func TestFencingTokenSurvivesExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := memory.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		_, nodes := memNodes(3, memory.WithClock(clock))
		c := newClient(t, nodes, redlock.WithFencing(), redlock.WithTTL(time.Second))
		redlock.SetClock(c, clock.Now)
		l1, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		clock.Advance(time.Hour) // the holder never unlocked; its lock expired
		l2, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.Greater(t, l2.Token(), l1.Token())
	})
}

// noRaise is a fencing node whose counter writes fail.
type noRaise struct{ *memory.Node }

var errRaise = errors.New("raise failed")

func (noRaise) RaiseFence(context.Context, string, string, string, uint64) (bool, error) {
	return false, errRaise
}

func TestFenceNotWrittenIsNotObtained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(3)
		nodes := []driver.Node{noRaise{mem[0]}, noRaise{mem[1]}, mem[2]}
		c := newClient(t, nodes, redlock.WithFencing())
		_, err := c.TryLock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained, "a lock whose token is not on a quorum is not returned")
		require.ErrorIs(t, err, redlock.ErrFenceNotWritten)
		require.ErrorIs(t, err, errRaise)
		synctest.Wait()
		require.Zero(t, holders(mem, "k"))
	})
}

// barrierNode is a node whose Close returns once every node of its barrier
// is closing (or after 5s): it stands for a node whose Close waits for a
// server that does not answer.
type barrierNode struct {
	driver.Node
	closing *sync.WaitGroup
	waited  *atomic.Bool // set when a Close gave up waiting
}

func (n barrierNode) Close() error {
	n.closing.Done()
	done := make(chan struct{})
	go func() { n.closing.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		n.waited.Store(true)
	}
	return n.Node.Close()
}

// Close closes the nodes at once, not one after another: five nodes whose
// Close each waits for a stalled server hold Close up once, not five times.
func TestCloseClosesNodesAtOnce(t *testing.T) {
	var closing sync.WaitGroup
	var waited atomic.Bool
	_, mem := memNodes(5)
	nodes := make([]driver.Node, len(mem))
	closing.Add(len(mem))
	for i, n := range mem {
		nodes[i] = barrierNode{Node: n, closing: &closing, waited: &waited}
	}
	c, err := redlock.New(nodes)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.False(t, waited.Load(), "a node's Close ran alone: Close closed the nodes one after another")
}
