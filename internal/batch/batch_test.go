package batch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-redlock/redlock/internal/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ctxKey struct{}

// A lone command runs at once, on the caller's goroutine, with its context.
func TestAloneRunsInline(t *testing.T) {
	ctx := context.WithValue(t.Context(), ctxKey{}, "mine")
	var got context.Context
	b := batch.New(func(ctx context.Context, calls []*batch.Call[int, int]) {
		require.Len(t, calls, 1)
		got = ctx
		calls[0].Res = calls[0].Cmd * 2
	}, 2, 8)
	r, err := b.Do(ctx, 21)
	require.NoError(t, err)
	require.Equal(t, 42, r)
	require.Equal(t, ctx, got, "a lone command is sent with its caller's own context")
}

// gate is an Exec that blocks each batch until a value is sent on open, or
// open is closed, so that the commands given meanwhile queue up; it records
// the batches.
type gate struct {
	open    chan struct{}
	entered chan struct{}
	mu      sync.Mutex
	batches [][]int
	ctxs    []context.Context
}

func newGate() *gate {
	return &gate{open: make(chan struct{}), entered: make(chan struct{}, 100)}
}

// answerFast sends one command through b and lets g answer it at once, so
// that b learns a round trip under a millisecond and keeps its senders (see
// Batcher): the tests that hold g's batches for longer are about the queue,
// not about a far server. The command (0) is g's first batch.
func answerFast(t *testing.T, g *gate, b *batch.Batcher[int, int]) {
	t.Helper()
	go func() { g.open <- struct{}{} }()
	_, err := b.Do(t.Context(), 0)
	require.NoError(t, err)
	<-g.entered
}

func (g *gate) exec(ctx context.Context, calls []*batch.Call[int, int]) {
	g.entered <- struct{}{}
	<-g.open
	g.mu.Lock()
	var cmds []int
	for _, c := range calls {
		cmds = append(cmds, c.Cmd)
		if c.Cmd < 0 {
			c.Err = errors.New("negative")
			continue
		}
		c.Res = c.Cmd * 2
	}
	g.batches = append(g.batches, cmds)
	g.ctxs = append(g.ctxs, ctx)
	g.mu.Unlock()
}

// While the only sender is busy, the commands that arrive wait and go
// together as one batch, each with its own result.
// It runs in a bubble (testing/synctest): its 50ms sleep lets the twenty
// commands queue on any machine.
func TestConcurrentCommandsBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		b := batch.New(g.exec, 1, 100)
		first := make(chan int, 1)
		go func() {
			r, _ := b.Do(t.Context(), 1)
			first <- r
		}()
		<-g.entered // the sender is busy with command 1
		const n = 20
		type res struct {
			cmd, r int
			err    error
		}
		results := make(chan res, n)
		var started sync.WaitGroup
		for i := range n {
			started.Add(1)
			go func() {
				started.Done()
				cmd := i + 2
				if i == 5 {
					cmd = -1
				}
				r, err := b.Do(t.Context(), cmd)
				results <- res{cmd, r, err}
			}()
		}
		started.Wait()
		time.Sleep(50 * time.Millisecond) // let them queue
		close(g.open)
		require.Equal(t, 2, <-first)
		for range n {
			r := <-results
			if r.cmd < 0 {
				require.EqualError(t, r.err, "negative")
				continue
			}
			require.NoError(t, r.err)
			require.Equal(t, r.cmd*2, r.r)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		require.Equal(t, []int{1}, g.batches[0])
		sent := 0
		for _, bt := range g.batches[1:] {
			sent += len(bt)
		}
		require.Equal(t, n, sent, "every queued command is sent once")
		require.Less(t, len(g.batches), n/2, "the queued commands went in batches, not one by one: %v", g.batches)
	})
}

// A batch is bounded by the latest of its commands' deadlines, so that none
// is cut short by another's.
// It runs in a bubble (testing/synctest): its 50ms sleep lets the three
// commands queue on any machine (one sent later makes a third batch).
func TestBatchContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		b := batch.New(g.exec, 1, 100)
		go b.Do(t.Context(), 1)
		<-g.entered
		late := time.Now().Add(time.Hour)
		var wg sync.WaitGroup
		for i, d := range []time.Time{time.Now().Add(time.Minute), late, time.Now().Add(2 * time.Minute)} {
			ctx, cancel := context.WithDeadline(t.Context(), d)
			defer cancel()
			wg.Go(func() { b.Do(ctx, i+2) })
		}
		time.Sleep(50 * time.Millisecond)
		close(g.open)
		wg.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		require.Len(t, g.batches, 2)
		d, ok := g.ctxs[1].Deadline()
		require.True(t, ok)
		require.True(t, d.Equal(late), "deadline %v, want the latest %v", d, late)
	})
}

// A command in flight in a batch, or still queued, returns as soon as its
// context ends; a queued one is then never sent.
// It runs in a bubble (testing/synctest): its 20ms sleep lets command 2
// queue behind 1 on any machine, as the test means.
func TestContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		b := batch.New(g.exec, 1, 100)
		answerFast(t, g, b)
		go b.Do(t.Context(), 1) // sent alone: the sender is busy
		<-g.entered
		inflight, cancelInflight := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			_, err := b.Do(inflight, 2)
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond) // 2 waits in the queue
		g.open <- struct{}{}              // 1 is done; 2 goes as a batch
		<-g.entered
		cancelInflight()
		require.ErrorIs(t, <-errc, context.Canceled, "a command in flight returns when its context ends")

		queued, cancelQueued := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancelQueued()
		start := time.Now()
		_, err := b.Do(queued, 3)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), time.Second)

		close(g.open)
		r, err := b.Do(t.Context(), 4)
		require.NoError(t, err)
		require.Equal(t, 8, r)
		g.mu.Lock()
		for _, bt := range g.batches {
			require.NotContains(t, bt, 3, "a command whose context ended while queued is never sent")
		}
		require.Contains(t, g.batches, []int{2})
		g.mu.Unlock()

		_, err = b.Do(queued, 5)
		require.ErrorIs(t, err, context.DeadlineExceeded, "a context already done sends nothing")
	})
}

// Many callers at once, with contexts ending at random: every call returns,
// with its own result or its context's error, and no goroutine is left.
func TestStress(t *testing.T) {
	var sent atomic.Int64
	b := batch.New(func(ctx context.Context, calls []*batch.Call[int, int]) {
		time.Sleep(time.Duration(len(calls)) * 10 * time.Microsecond)
		for _, c := range calls {
			sent.Add(1)
			c.Res = c.Cmd + 1
		}
	}, 2, 16)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 200 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration((g*i)%300)*time.Microsecond)
				r, err := b.Do(ctx, i)
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					continue
				}
				require.Equal(t, i+1, r)
			}
		})
	}
	wg.Wait()
	require.Positive(t, sent.Load())
}

// A Batcher is idle when no call waits and none is in flight.
func TestIdle(t *testing.T) {
	g := newGate()
	b := batch.New(g.exec, 1, 8)
	require.True(t, b.Idle(), "a new Batcher")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = b.Do(t.Context(), 1)
	}()
	<-g.entered
	require.False(t, b.Idle(), "a call in flight")
	close(g.open)
	<-done
	require.True(t, b.Idle(), "once the call returned")
}
