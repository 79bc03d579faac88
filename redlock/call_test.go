package redlock_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// counting is a memory node that counts the calls it gets.
type counting struct {
	*memory.Node
	setNX, extend, release atomic.Int32
}

func (n *counting) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.setNX.Add(1)
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n *counting) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.extend.Add(1)
	return n.Node.Extend(ctx, key, value, ttl)
}

func (n *counting) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.release.Add(1)
	return n.Node.EvalRelease(ctx, key, value)
}

func (n *counting) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	n.release.Add(1)
	return n.Node.ReleaseNotify(ctx, key, value)
}

func countingNodes(n int) ([]*counting, []driver.Node) {
	cs := make([]*counting, n)
	nodes := make([]driver.Node, n)
	for i := range cs {
		cs[i] = &counting{Node: memory.New()}
		nodes[i] = cs[i]
	}
	return cs, nodes
}

func TestCallOptionsRefused(t *testing.T) {
	_, nodes := memNodes(3)
	c := newClient(t, nodes, shortTTL...) // TTL 1s, node timeout 500ms
	ctx := t.Context()
	fn := func(context.Context) error { return nil }
	calls := map[string]func(...redlock.Option) error{
		"TryLock": func(o ...redlock.Option) error { _, err := c.TryLock(ctx, "k", o...); return err },
		"Lock":    func(o ...redlock.Option) error { _, err := c.Lock(ctx, "k", o...); return err },
		"Do":      func(o ...redlock.Option) error { return c.Do(ctx, "k", fn, o...) },
	}
	clientOnly := map[string]redlock.Option{
		"WithTLSConfig":   redlock.WithTLSConfig(&tls.Config{}),
		"WithKeyPrefix":   redlock.WithKeyPrefix("p:"),
		"WithFencing":     redlock.WithFencing(),
		"WithNodeTimeout": redlock.WithNodeTimeout(time.Millisecond),
		"WithDriftFactor": redlock.WithDriftFactor(0.1),
	}
	for method, call := range calls {
		for name, o := range clientOnly {
			err := call(o)
			require.Error(t, err, "%s(%s)", method, name)
			assert.ErrorContains(t, err, name, "the error names the option")
			assert.ErrorContains(t, err, "Client only")
			assert.NotErrorIs(t, err, redlock.ErrNotObtained, "bad input is not a lock held elsewhere")
		}
		assert.ErrorContains(t, call(nil), "nil Option", method)
	}
	for _, tc := range []struct {
		method string
		opt    redlock.Option
		name   string
	}{
		{"TryLock", redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)), "WithBackoff"},
		{"TryLock", redlock.WithMaxAttempts(3), "WithMaxAttempts"},
		{"TryLock", redlock.WithExtendInterval(100 * time.Millisecond), "WithExtendInterval"},
		{"Lock", redlock.WithExtendInterval(100 * time.Millisecond), "WithExtendInterval"},
	} {
		err := calls[tc.method](tc.opt)
		require.Error(t, err, "%s(%s)", tc.method, tc.name)
		assert.ErrorContains(t, err, tc.name+" means nothing for "+tc.method)
	}
	// Values are checked as Open checks them, per call.
	for _, tc := range []struct {
		method string
		opts   []redlock.Option
		want   string
	}{
		{"TryLock", []redlock.Option{redlock.WithTTL(0)}, "not positive"},
		{"Lock", []redlock.Option{redlock.WithTTL(redlock.MaxTTL + 1)}, "longer than"},
		{"TryLock", []redlock.Option{redlock.WithTTL(time.Millisecond)}, "drift allowance"},
		{"Lock", []redlock.Option{redlock.WithTTL(400 * time.Millisecond)}, "node timeout"},
		{"Lock", []redlock.Option{redlock.WithBackoff(nil)}, "nil Backoff"},
		{"Do", []redlock.Option{redlock.WithMaxAttempts(0)}, "less than 1"},
		{"Do", []redlock.Option{redlock.WithExtendInterval(-time.Second)}, "not positive"},
		// 600ms + the node timeout 500ms: past the validity of a 1s TTL.
		{"Do", []redlock.Option{redlock.WithExtendInterval(600 * time.Millisecond)}, "leaves no room for an extension"},
		// The default interval follows the TTL: 2s/3 + 500ms < 2s - 22ms, fine;
		// an interval given with it is checked against it.
		{"Do", []redlock.Option{redlock.WithTTL(2 * time.Second), redlock.WithExtendInterval(1500 * time.Millisecond)}, "leaves no room for an extension"},
	} {
		err := calls[tc.method](tc.opts...)
		require.Error(t, err, "%s with %s", tc.method, tc.want)
		assert.ErrorContains(t, err, tc.want)
		assert.ErrorContains(t, err, "redlock: "+tc.method+":")
	}
	_, err := redlock.New(nodes, redlock.WithMaxAttempts(-1))
	assert.ErrorContains(t, err, "less than 1")
}

func TestCallTTL(t *testing.T) {
	mem, nodes := memNodes(3)
	// TTL 10s; liveNodeTimeout: the default 200ms node timeout, on the
	// real clock, failed a call on a machine that stalled the test that
	// long (at nice 19 beside CPU hogs).
	c := newClient(t, nodes, redlock.WithNodeTimeout(liveNodeTimeout))
	ctx := t.Context()
	start := time.Now()
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(time.Minute))
	require.NoError(t, err)
	assert.Greater(t, l.Until().Sub(start), 50*time.Second, "Until follows the call's TTL")
	require.Eventually(t, func() bool { return holders(mem, "k") == 3 }, 5*time.Second, time.Millisecond)
	for _, m := range mem {
		d, _ := m.PTTL("k")
		assert.Greater(t, d, 50*time.Second, "the nodes hold the key for the call's TTL")
	}
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, 10*time.Second, c.TTL(), "a call's TTL is not the Client's")

	l, err = c.TryLock(ctx, "k")
	require.NoError(t, err)
	assert.Less(t, l.Until().Sub(time.Now()), 11*time.Second, "a call without options has the Client's TTL")
	require.NoError(t, l.Unlock(ctx))
}

// A per-call TTL re-derives Do's extension interval: a Client with a TTL of
// a minute (extensions every 20s) runs Do with a TTL of 600ms, extended
// every 200ms, and its function outlives the call's TTL.
// It runs in a bubble (testing/synctest): with a 150 ms node timeout on the
// real clock a loaded machine can fail an acquisition or an extension.
func TestDoCallTTLExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, nodes := countingNodes(3)
		c := newClient(t, nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(150*time.Millisecond))
		err := c.Do(t.Context(), "k", func(ctx context.Context) error {
			for _, n := range cs {
				d, _ := n.PTTL("k")
				if d > time.Second {
					return errors.New("a node holds the key for more than the call's TTL")
				}
			}
			select {
			case <-time.After(1500 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, redlock.WithTTL(600*time.Millisecond))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, cs[0].extend.Load()+cs[1].extend.Load()+cs[2].extend.Load(), int32(4),
			"Do extended every TTL/3 of the call's TTL")
	})
}

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the node timeout (200ms by default) fails a live node's
// call, and with it the TryLock (or Unlock) the test needs.
func TestMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, nodes := countingNodes(3)
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)), redlock.WithMaxAttempts(2))
		ctx := t.Context() // no deadline: only the cap ends the wait
		held, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, cs[0].Holds("k") && cs[1].Holds("k") && cs[2].Holds("k"))
		before := cs[0].setNX.Load()

		_, err = c.Lock(ctx, "k", redlock.WithMaxAttempts(5))
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.ErrorContains(t, err, "gave up after 5 attempts")
		assert.NotErrorIs(t, err, redlock.ErrUnavailable, "the key is held: the nodes answered")
		synctest.Wait()
		require.EqualValues(t, 5, cs[0].setNX.Load()-before, "a SET per attempt")

		before = cs[0].setNX.Load()
		err = c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") })
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.ErrorContains(t, err, "gave up after 2 attempts", "the Client's cap")
		synctest.Wait()
		require.EqualValues(t, 2, cs[0].setNX.Load()-before)

		_, err = c.Lock(ctx, "k", redlock.WithMaxAttempts(1))
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.ErrorContains(t, err, "gave up after 1 attempt (WithMaxAttempts)", "one attempt, not 1 attempts")
		require.NoError(t, held.Unlock(ctx))
	})
}

// It runs in a bubble (testing/synctest): its Locks' 100 ms deadlines on the
// real clock must see an attempt finish, a margin a loaded machine can pass.
func TestUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(5*time.Millisecond)))
		ctx := t.Context()

		other, err := c.TryLock(ctx, "held")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "held"))
		_, err = c.TryLock(ctx, "held")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "a held key is busy, not unavailable")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		assert.Equal(t, 3, v.Needed)
		assert.Equal(t, 5, v.Nodes)
		assert.GreaterOrEqual(t, v.Refused, 3)
		assert.Zero(t, v.Failed)
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = c.Lock(wctx, "held")
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, redlock.ErrUnavailable)

		for _, m := range mem[:3] {
			m.SetDown(true)
		}
		_, err = c.TryLock(ctx, "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "three of five nodes failed")
		require.ErrorAs(t, err, &v)
		assert.GreaterOrEqual(t, v.Failed, 3)
		assert.Contains(t, err.Error(), "too many nodes failed")

		wctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = c.Lock(wctx, "k")
		cancel()
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, redlock.ErrUnavailable, "Lock's verdict is its last finished attempt's")

		err = other.Extend(ctx, time.Minute)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		_, err = other.TTL(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		err = other.Unlock(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrUnavailable)
	})
}

// The verdict of Lock is that of its last attempt that finished: nodes that
// went down after the key was found held make it unavailable, and the other
// way round.
//
// The key is taken once every SET of Lock's attempts so far has answered and
// its key was released: an attempt is decided, and the Backoff called, while
// a SET of it may still be on its way (the second attempt's, right after the
// first, on a node that was down, decided by the other two), and landing
// after the nodes are back it refused the TryLock below (6 runs in 1800
// under load: "1 of 3 nodes agreed, 2 needed (2 refused)"). In a bubble
// (testing/synctest): on the real clock, a machine that stalls the test
// past the default 200ms node timeout fails the TryLock made in the
// Backoff, or the Unlock.
func TestLockVerdictIsLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		o := &setCalls{}
		c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(5*time.Millisecond)), redlock.WithMaxAttempts(3), redlock.WithObserver(o))
		ctx := t.Context()
		mem[0].SetDown(true)
		mem[1].SetDown(true)
		attempts := 0
		var held *redlock.Lock
		_, err := c.Lock(ctx, "k", redlock.WithBackoff(func(int) time.Duration {
			attempts++
			if attempts == 1 { // before the third attempt: the nodes are back, the key held
				for _, m := range mem {
					m.SetDown(false)
				}
				if !assert.Eventually(t, func() bool { return o.settled() && holders(mem, "k") == 0 }, 5*time.Second, time.Millisecond,
					"every SET of Lock's attempts answered, and its key released") {
					return time.Millisecond
				}
				var err error
				if held, err = c.TryLock(ctx, "k"); err != nil {
					t.Error(err)
				}
			}
			return time.Millisecond
		}))
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.NotErrorIs(t, err, redlock.ErrUnavailable, "the last attempt found the key held")
		require.NotNil(t, held)
		require.NoError(t, held.Unlock(ctx))
	})
}

// setCalls counts the acquisition attempts of a Client of three nodes and
// their SETs that have answered.
type setCalls struct {
	redlock.NopObserver
	attempts, answered atomic.Int32
}

func (o *setCalls) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.attempts.Add(1)
	return ctx, nil
}

func (o *setCalls) NodeCall(_ context.Context, e redlock.NodeCall) {
	if e.Operation == redlock.OpAcquire {
		o.answered.Add(1)
	}
}

// settled reports whether every attempt's SET on each of the three nodes
// has answered.
func (o *setCalls) settled() bool { return o.answered.Load() == 3*o.attempts.Load() }

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the node timeout (200ms by default) fails a live node's
// call, and with it the TryLock (or Unlock) the test needs.
func TestUnlockTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, nodes := countingNodes(3)
		c := newClient(t, nodes)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		synctest.Wait()
		require.EqualValues(t, 3, cs[0].release.Load()+cs[1].release.Load()+cs[2].release.Load())
		for range 2 {
			err = l.Unlock(t.Context())
			require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked)
			assert.NotErrorIs(t, err, redlock.ErrLockLost)
		}
		assert.Equal(t, int32(3), cs[0].release.Load()+cs[1].release.Load()+cs[2].release.Load(), "a second Unlock calls no node")
		_, err = l.TTL(t.Context())
		require.ErrorIs(t, err, redlock.ErrLockLost, "TTL after Unlock")
	})
}

// shortened is a memory node whose TTL answers d less than the truth.
type shortened struct {
	*memory.Node
	d time.Duration
}

func (n shortened) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	left, held, err := n.Node.TTL(ctx, key, value)
	return max(left-n.d, 0), held, err
}

// noTTL is a node without driver.TTLer.
type noTTL struct{ driver.Node }

// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can pass the 100 ms within which the TTL returned must be Until's.
func TestLockTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(5)
		nodes := []driver.Node{
			shortened{mem[0], 0}, shortened{mem[1], 2 * time.Second}, shortened{mem[2], 4 * time.Second},
			shortened{mem[3], 6 * time.Second}, shortened{mem[4], 8 * time.Second},
		}
		c := newClient(t, nodes) // TTL 10s
		ctx := t.Context()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 5, holders(mem, "k"))
		until := l.Until()
		done := l.Done()

		left, err := l.TTL(ctx)
		require.NoError(t, err)
		// The nodes answer about 10s, 8s, 6s, 4s, 2s: the quorum (3) guarantees
		// the third largest.
		assert.LessOrEqual(t, left, 6*time.Second-102*time.Millisecond, "at most the quorum-th largest TTL less the drift")
		assert.Greater(t, left, 5*time.Second, "the quorum-th largest TTL")
		assert.True(t, l.Until().Before(until), "TTL lowers Until")
		assert.WithinDuration(t, time.Now().Add(left), l.Until(), 100*time.Millisecond, "the TTL returned is Until's")

		require.NoError(t, l.Extend(ctx, time.Minute))
		extended := l.Until()
		left, err = l.TTL(ctx)
		require.NoError(t, err)
		assert.Less(t, left, time.Minute-4*time.Second)
		assert.False(t, l.Until().After(extended), "TTL never raises Until")

		// Fewer than a quorum hold it: lost, and Done closes.
		mem[0].Delete("k")
		mem[1].Delete("k")
		mem[2].Delete("k")
		_, err = l.TTL(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.NotErrorIs(t, err, redlock.ErrUnavailable)
		assert.True(t, closedWithin(done, time.Second), "TTL that finds the lock lost closes Done")
		_, err = l.TTL(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost, "a lost lock stays lost")

		// Nodes without driver.TTLer count as failed.
		mem2, _ := memNodes(3)
		c2 := newClient(t, []driver.Node{noTTL{mem2[0]}, noTTL{mem2[1]}, mem2[2]})
		l2, err := c2.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 3, holders(mem2, "k"))
		_, err = l2.TTL(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		assert.ErrorContains(t, err, "driver.TTLer")
	})
}

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past shortTTL's 500ms node timeout fails the TryLock.
func TestLockTTLAfterUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, nodes := memNodes(3)
		c := newClient(t, nodes, shortTTL...)
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		time.Sleep(time.Until(l.Until()) + 10*time.Millisecond)
		_, err = l.TTL(t.Context())
		require.ErrorIs(t, err, redlock.ErrLockLost, "Until has passed")
	})
}

// failing answers every SetNX with err.
type failing struct {
	*memory.Node
	err   error
	calls atomic.Int32
}

func (n *failing) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	n.calls.Add(1)
	return false, n.err
}

// grantsAll is a node that grants every SET and keeps nothing.
type grantsAll struct{ *memory.Node }

func (grantsAll) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

func TestPermanentErrorsFailFast(t *testing.T) {
	for _, reply := range []string{
		"WRONGPASS invalid username-password pair or user is disabled.",
		"NOAUTH Authentication required.",
		"NOPERM User u has no permissions to run the 'set' command",
		"OOM command not allowed when used memory > 'maxmemory'.",
		"READONLY You can't write against a read only replica.",
	} {
		code, _, _ := strings.Cut(reply, " ")
		t.Run(code, func(t *testing.T) {
			bad := []*failing{{Node: memory.New(), err: errors.New(reply)}, {Node: memory.New(), err: errors.New(reply)}}
			nodes := []driver.Node{bad[0], bad[1], memory.New()}
			c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)))
			// No deadline: only the fail-fast rule ends Lock.
			_, err := c.Lock(t.Context(), "k")
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
			assert.ErrorContains(t, err, code+", which retrying cannot fix")
			var v *redlock.VoteError
			require.ErrorAs(t, err, &v)
			assert.Equal(t, 2, v.Permanent)
			assert.Equal(t, int32(1), bad[0].calls.Load(), "Lock made one attempt")
			err = c.Do(t.Context(), "k", func(context.Context) error { return errors.New("must not run") })
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			// Lock's attempt may have left a late SET on the good node, whose
			// refusal can decide an attempt before both errors are in; the
			// attempt then waits for the other error (see
			// TestRefusalsOutDecide), so Do stops at its first.
			assert.Equal(t, int32(2), bad[0].calls.Load(), "Do made one attempt: %v", err)
		})
	}
	// In a bubble (testing/synctest): on the real clock, a machine that
	// stalls the test past the default 200ms node timeout fails the TryLock
	// that holds the key.
	synctest.Test(t, func(t *testing.T) {
		// A transient error is retried. The third node grants every SET and
		// keeps nothing: an attempt decided by the two errors before its SET
		// answered releases it there in the background, and the next attempt
		// might find it still set (refused, not unavailable).
		bad := []*failing{{Node: memory.New(), err: errors.New("ERR connection reset")}, {Node: memory.New(), err: errors.New("LOADING Redis is loading the dataset in memory")}}
		c := newClient(t, []driver.Node{bad[0], bad[1], grantsAll{memory.New()}}, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)), redlock.WithMaxAttempts(3))
		_, err := c.Lock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		assert.Equal(t, int32(3), bad[0].calls.Load(), "transient errors are retried")
		// A minority of permanent errors leaves a quorum possible: retried too.
		one := &failing{Node: memory.New(), err: errors.New("WRONGPASS invalid")}
		mem, _ := memNodes(2)
		held, err := newClient(t, []driver.Node{mem[0], mem[1]}).TryLock(t.Context(), "k")
		require.NoError(t, err)
		defer held.Unlock(t.Context())
		c = newClient(t, []driver.Node{one, mem[0], mem[1]}, redlock.WithBackoff(redlock.ConstantBackoff(time.Millisecond)), redlock.WithMaxAttempts(3))
		_, err = c.Lock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		// Each attempt was decided by the two refusals, maybe before its call
		// to the failing node had started on a worker: Close waits for the
		// calls in flight, so that all three have been made.
		require.NoError(t, c.Close())
		assert.Equal(t, int32(3), one.calls.Load(), "a quorum was still possible")
	})
}

// The path without options costs no allocation for them.
func TestNoOptionsNoAllocation(t *testing.T) {
	_, nodes := memNodes(3)
	c := newClient(t, nodes)
	allocs := testing.AllocsPerRun(100, func() {
		if err := redlock.CallOptions(c); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "reading a call's settings without options")
}

// Nodes that time out count as failed, as nodes that answer errors do.
// It runs in a bubble (testing/synctest): with a 50 ms node timeout on the
// real clock a loaded machine could time out the node that answers too.
func TestUnavailableStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithNodeTimeout(50*time.Millisecond))
		mem[0].SetStalled(true)
		mem[1].SetStalled(true)
		defer mem[0].SetStalled(false)
		defer mem[1].SetStalled(false)
		_, err := c.TryLock(t.Context(), "k")
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.ErrorIs(t, err, redlock.ErrUnavailable)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the node timeout")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		assert.Equal(t, 2, v.Failed)
	})
}

// A node whose acquisition SET had not answered when the lock was granted is
// of unknown state to Unlock, as a node that fails: with it and a failed node
// too many for a quorum, Unlock's error matches ErrUnavailable, not a
// refusal that would say the lock was lost.
// It runs in a bubble (testing/synctest): with a 100 ms node timeout on the
// real clock a loaded machine could time out the TryLock's three answering
// nodes, which must grant it.
func TestUnlockCountsUnansweredSetsAsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		c := newClient(t, nodes, redlock.WithNodeTimeout(100*time.Millisecond))
		mem[3].SetStalled(true)
		mem[4].SetStalled(true)
		l, err := c.TryLock(t.Context(), "k") // granted by 0, 1, 2; 3 and 4 pending
		require.NoError(t, err)
		mem[1].SetDown(true)
		mem[2].SetDown(true)
		err = l.Unlock(t.Context())
		mem[3].SetStalled(false)
		mem[4].SetStalled(false)
		require.ErrorIs(t, err, redlock.ErrLockLost, "a quorum did not confirm the release")
		require.ErrorIs(t, err, redlock.ErrUnavailable, "4 of 5 nodes are of unknown state")
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		assert.Equal(t, 0, v.Refused, "no node said the lock was not held")
	})
}
