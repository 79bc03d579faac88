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

// A batch that times out on the network fails the commands queued behind it,
// unsent, rather than sending them to a server that does not answer.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can let the first send time out (50ms) before the three others queue.
func TestTimeoutFailsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &timeoutExec{first: make(chan struct{})}
		b := batch.New(e.exec, 1, 100)
		ctx := driver.WithNetworkTimeout(t.Context(), 50*time.Millisecond)
		errc := make(chan error, 4)
		go func() {
			_, err := b.Do(ctx, 1)
			errc <- err
		}()
		<-e.first
		e.queuedFail(t, b, ctx, errc, 2, []int{1}, "the commands queued behind a timed-out one are not sent")
	})
}

// queuedFail queues commands first, first+1 and first+2 on b with ctx, each
// sending its error on errc, and requires four errors on errc (theirs and
// that of the command in flight before them), and that the commands sent
// are want.
func (e *timeoutExec) queuedFail(t *testing.T, b *batch.Batcher[int, int], ctx context.Context, errc chan error, first int, want []int, msg string) {
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
	require.Equal(t, want, e.sent, msg)
}

// A server that answered a send within twice the network timeout keeps its
// queue when one send times out: it is slow, not stalled.
// It runs in a bubble (testing/synctest): on the real clock a loaded machine
// can delay the timed-out send past twice the network timeout (400ms) after
// the last answer, or the queued commands past the send.
func TestSlowServerKeepsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			sent  []int
			entry = make(chan struct{}, 10)
		)
		b := batch.New(func(ctx context.Context, calls []*batch.Call[int, int]) {
			mu.Lock()
			for _, c := range calls {
				sent = append(sent, c.Cmd)
			}
			mu.Unlock()
			entry <- struct{}{}
			if calls[0].Cmd == 2 { // this send times out
				<-ctx.Done()
				for _, c := range calls {
					c.Err = os.ErrDeadlineExceeded
				}
				return
			}
			for _, c := range calls {
				c.Res = c.Cmd
			}
		}, 1, 100)
		ctx := driver.WithNetworkTimeout(t.Context(), 200*time.Millisecond)
		_, err := b.Do(ctx, 1) // answered
		require.NoError(t, err)
		errc, timedOut := make(chan error, 3), make(chan error, 1)
		go func() {
			_, err := b.Do(ctx, 2)
			timedOut <- err
		}()
		<-entry
		<-entry
		for i := range 3 {
			go func() {
				_, err := b.Do(ctx, 3+i)
				errc <- err
			}()
		}
		// Which returns first, the timed-out send or the queued ones sent
		// after it, is up to the scheduler.
		require.ErrorIs(t, <-timedOut, context.DeadlineExceeded, "the send that timed out fails, as a deadline")
		for range 3 {
			require.NoError(t, <-errc, "the queued commands of a server that answered recently are sent")
		}
		mu.Lock()
		defer mu.Unlock()
		require.ElementsMatch(t, []int{1, 2, 3, 4, 5}, sent)
	})
}
