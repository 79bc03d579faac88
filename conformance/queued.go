package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
)

// QueuedAtClose checks that n, a node on srv that holds commands in a local
// queue (driver.Queuer; any other node passes), sends none of those still
// queued when it is closed: they fail with an error matching
// driver.ErrClosed, and their keys are never set, also when the server
// answers again afterwards; and that every call, in flight or queued, ends
// soon after Close. It pauses srv until two calls wait in n's queue
// behind those in flight, closes n, and resumes srv. RunRedis checks the
// nodes a driver opens (Stalled/CloseSendsNoQueuedCall); a driver whose
// nodes can be made over a client the user configured, which the node's
// Close leaves open, calls it for those too.
func QueuedAtClose(t *testing.T, srv *redistest.Server, n driver.Node) {
	t.Helper()
	q, ok := n.(driver.Queuer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subtestTimeout)
	defer cancel()
	must(t, "SetNX before the pause")(n.SetNX(ctx, key(t), value(), time.Minute))
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	// Calls, a millisecond apart, until two of them wait in the queue.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[string]error{}
	)
	defer wg.Wait()
	prefix := key(t)
	for i := 0; q.Pending().Depth < 2; i++ {
		if i == 1000 {
			t.Fatalf("1000 calls on a stalled server, and the node reports %d waiting in its queue (driver.Queuer), not 2", q.Pending().Depth)
		}
		k := fmt.Sprint(prefix, "-", i)
		wg.Go(func() {
			_, err := n.SetNX(ctx, k, value(), time.Minute)
			mu.Lock()
			errs[k] = err
			mu.Unlock()
		})
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the last calls reach the queue
	queued := q.Pending().Depth
	if err := n.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	returned := make(chan struct{})
	go func() {
		wg.Wait()
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(closeBound + stallBound):
		t.Errorf("calls still running %v after Close, whose context ends in %v: a call in flight or queued when its node is closed must end then", closeBound+stallBound, subtestTimeout)
		<-returned
	}
	closed := 0
	for k, err := range errs {
		if !errors.Is(err, driver.ErrClosed) {
			continue
		}
		closed++
		got, err := srv.Do(ctx, "EXISTS", k)
		if err != nil {
			t.Fatalf("EXISTS %s: %v", k, err)
		}
		if got != int64(0) {
			t.Errorf("SetNX(%s) failed with ErrClosed, but was sent after Close: the key is set", k)
		}
	}
	if closed < queued {
		t.Errorf("%d calls waited in the node's queue at Close, and only %d failed with an error matching driver.ErrClosed: the others were sent after Close, or failed otherwise", queued, closed)
	}
}

// stalledCloseQueued is QueuedAtClose for a node the driver opens.
func stalledCloseQueued(t *testing.T, ctx context.Context, s *redisSuite) {
	srv := redistest.NewServer(t)
	QueuedAtClose(t, srv, s.open(t, fullAddr(t, srv)))
}
