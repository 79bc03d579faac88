package batch_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// Urgent commands go before the others that wait, and Pending reports the
// queue.
func TestUrgentFirstAndPending(t *testing.T) {
	g := newGate()
	b := batch.New(g.exec, 1, 2)
	answerFast(t, g, b)
	go b.Do(t.Context(), 1)
	<-g.entered // the only sender is busy
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { b.Do(t.Context(), 10+i) })
	}
	require.Eventually(t, func() bool { return b.Pending().Depth == 3 }, 5*time.Second, time.Millisecond)
	for i := range 2 {
		wg.Go(func() { b.Do(driver.WithUrgent(t.Context()), 20+i) })
	}
	require.Eventually(t, func() bool { return b.Pending().Depth == 5 }, 5*time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	require.GreaterOrEqual(t, b.Pending().Oldest, 10*time.Millisecond, "the oldest waited at least since it queued")
	close(g.open)
	wg.Wait()
	require.Equal(t, driver.Pending{}, b.Pending(), "nothing waits once all are sent")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.ElementsMatch(t, []int{20, 21}, g.batches[2], "the urgent commands go in the first batch after the busy one: %v", g.batches)
}

// A command with a network timeout may wait in the queue longer than that
// timeout: the timeout starts when its batch is sent.
// It runs in a bubble (testing/synctest): its sleep queues the command on any
// machine (one sent later proves nothing).
func TestNetworkTimeoutStartsAtSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		b := batch.New(g.exec, 1, 100)
		go b.Do(t.Context(), 1)
		<-g.entered
		const timeout = 20 * time.Millisecond
		errc := make(chan error, 1)
		go func() {
			_, err := b.Do(driver.WithNetworkTimeout(t.Context(), timeout), 2)
			errc <- err
		}()
		time.Sleep(5 * timeout) // queued for longer than its timeout
		sent := time.Now()
		close(g.open)
		require.NoError(t, <-errc, "a queued command does not fail for the time it waited")
		g.mu.Lock()
		defer g.mu.Unlock()
		d, ok := g.ctxs[1].Deadline()
		require.True(t, ok, "the batch is bounded by the network timeout")
		require.False(t, d.Before(sent.Add(timeout)), "deadline %v is before the send %v plus the timeout", d, sent)
	})
}

// timeoutExec blocks every batch until its context's deadline and fails it
// with a timeout, as a stalled server would; it counts the commands sent.
type timeoutExec struct {
	mu    sync.Mutex
	sent  []int
	first chan struct{}
	once  sync.Once
}

func (e *timeoutExec) exec(ctx context.Context, calls []*batch.Call[int, int]) {
	e.mu.Lock()
	for _, c := range calls {
		e.sent = append(e.sent, c.Cmd)
	}
	e.mu.Unlock()
	e.once.Do(func() { close(e.first) })
	<-ctx.Done()
	for _, c := range calls {
		c.Err = os.ErrDeadlineExceeded
	}
}

// A batch that times out on the network when the server has answered
// nothing for more than twice that timeout fails the commands queued behind
// it, unsent, rather than sending them to a server that does not answer. A
// batch holds one command here: the first two sends time out within twice
// the timeout of the first (the server was asked that long, no more), the
// third after it, and the command queued behind it fails unsent.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can let the first send time out (50ms) before the three others queue.
func TestTimeoutFailsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &timeoutExec{first: make(chan struct{})}
		b := batch.New(e.exec, 1, 1)
		ctx := driver.WithNetworkTimeout(t.Context(), 50*time.Millisecond)
		errc := make(chan error, 4)
		go func() {
			_, err := b.Do(ctx, 1)
			errc <- err
		}()
		<-e.first
		e.queuedFail(t, b, ctx, errc, 2, 3, "the commands queued behind a server silent for more than twice the timeout are not sent")
	})
}

// queuedFail queues commands first, first+1 and first+2 on b with ctx, each
// sending its error on errc, and requires four errors on errc (theirs and
// that of the command in flight before them), and that sends commands were
// sent: 1 to first-1, in order, then those of the queued ones that went
// before the others failed (in the order they queued, which is the
// scheduler's).
func (e *timeoutExec) queuedFail(t *testing.T, b *batch.Batcher[int, int], ctx context.Context, errc chan error, first, sends int, msg string) {
	t.Helper()
	for i := range 3 {
		go func() {
			_, err := b.Do(ctx, first+i)
			errc <- err
		}()
	}
	require.Eventually(t, func() bool { return b.Pending().Depth == 3 }, 5*time.Second, time.Millisecond)
	for range 4 {
		require.Error(t, <-errc)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(t, e.sent, sends, "%s: sent %v", msg, e.sent)
	for i := range first - 1 {
		require.Equal(t, i+1, e.sent[i], "%s: sent %v", msg, e.sent)
	}
}

// A server that answered a send within twice the network timeout keeps its
// queue when one send times out: it is slow, not stalled.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can delay the timed-out send past twice the network timeout (400ms) after
// the last answer, or the queued commands past the send.
func TestSlowServerKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newNthTimesOut(2)
		b := batch.New(e.exec, 1, 100)
		ctx := driver.WithNetworkTimeout(t.Context(), 200*time.Millisecond)
		_, err := b.Do(ctx, 1) // answered
		require.NoError(t, err)
		failed, err := stormBehind(t, e, b, ctx, 2, 3)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the send that timed out fails, as a deadline")
		require.Zero(t, failed, "the queued commands of a server that answered recently are sent")
		e.mu.Lock()
		defer e.mu.Unlock()
		require.ElementsMatch(t, []int{1, 2, 100, 101, 102}, e.sent)
	})
}

// nthTimesOutExec answers every send but the nth (counted from 1), which it
// holds until its context's deadline and fails with a timeout: a server
// whose first connection is made too slowly for the network timeout (or
// whose first reply is read too late by a starved client), or that stalls
// once after it answered. It records the commands sent.
type nthTimesOutExec struct {
	n     int
	held  chan struct{} // closed when the nth send began
	mu    sync.Mutex
	sent  []int // the commands sent, in order
	sends int
}

func newNthTimesOut(n int) *nthTimesOutExec {
	return &nthTimesOutExec{n: n, held: make(chan struct{})}
}

func (e *nthTimesOutExec) exec(ctx context.Context, calls []*batch.Call[int, int]) {
	e.mu.Lock()
	e.sends++
	held := e.sends == e.n
	for _, c := range calls {
		e.sent = append(e.sent, c.Cmd)
	}
	e.mu.Unlock()
	if held {
		close(e.held)
		<-ctx.Done()
		for _, c := range calls {
			c.Err = os.ErrDeadlineExceeded
		}
		return
	}
	for _, c := range calls {
		c.Res = c.Cmd
	}
}

// storm queues n commands with ctx on b behind a send in flight, and returns
// how many of them failed once all returned.
func storm(t *testing.T, b *batch.Batcher[int, int], ctx context.Context, n int) int {
	t.Helper()
	errc := make(chan error, n)
	for i := range n {
		go func() {
			_, err := b.Do(ctx, 100+i)
			errc <- err
		}()
	}
	synctest.Wait()
	require.Equal(t, n, b.Pending().Depth, "the commands wait behind the send in flight")
	failed := 0
	for range n {
		if <-errc != nil {
			failed++
		}
	}
	return failed
}

// stormBehind sends cmd with ctx on b, which e holds until it times out
// (cmd must be e's nth send), queues n commands behind it (storm), and
// returns how many of the n failed and the error of cmd.
func stormBehind(t *testing.T, e *nthTimesOutExec, b *batch.Batcher[int, int], ctx context.Context, cmd, n int) (int, error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, cmd)
		errc <- err
	}()
	<-e.held
	failed := storm(t, b, ctx, n)
	return failed, <-errc
}

// The first send to a server that times out does not fail the commands
// queued behind it: the server was asked for one network timeout, it did
// not answer nothing for twice that. Before, a Batcher that had no answer
// yet counted the server's silence from the zero time, so that its first
// timeout failed its whole queue, unsent: at a Client's first use, 1,000
// concurrent Do's on five servers, one first call that timed out (its
// connection made too late on a loaded machine) failed the 500 SETs queued
// behind it on that server (the Client admits 512 attempts at once), and
// the locks were held on the four others alone.
// It runs in a bubble (testing/synctest): the commands queue behind the
// first send on any machine.
func TestFirstTimeoutKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newNthTimesOut(1)
		b := batch.New(e.exec, 1, 100)
		ctx := driver.WithNetworkTimeout(t.Context(), 500*time.Millisecond)
		failed, err := stormBehind(t, e, b, ctx, 1, 500)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the first send times out")
		require.Zero(t, failed, "commands queued behind a server's first timeout failed")
	})
}

// A server that answered, then had nothing to do for long, has not been
// silent for that long when its next send times out: the commands queued
// behind it are sent. Before, its silence counted from its last answer, and
// the first timeout after a quiet spell failed the whole queue.
func TestTimeoutAfterIdleKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newNthTimesOut(2) // the first send after the quiet spell times out
		b := batch.New(e.exec, 1, 100)
		ctx := driver.WithNetworkTimeout(t.Context(), 500*time.Millisecond)
		_, err := b.Do(ctx, 1)
		require.NoError(t, err)
		time.Sleep(time.Minute) // nothing to send
		failed, err := stormBehind(t, e, b, ctx, 2, 500)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the send after the quiet spell times out")
		require.Zero(t, failed, "commands queued behind the first timeout after a quiet spell failed")
	})
}
