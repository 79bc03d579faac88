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

// QueuedAtClose checks that n, a node on srv, closed while calls wait on srv
// stalled, returns from Close within closeBound, ends every call soon after
// srv answers again, and never sends a call that failed with an error
// matching driver.ErrClosed: its key is never set. It pauses srv, starts
// calls a millisecond apart (until two wait in n's local queue behind those
// in flight, for a node that queues them: driver.Queuer; eight for another),
// closes n, and resumes srv. A node that queues must fail every call still
// queued with such an error, and send none of them. RunRedis checks the nodes
// a driver opens (Stalled/CloseSendsNoQueuedCall); a driver whose nodes can
// be made over a client the user configured, which the node's Close leaves
// open, calls it for those too.
func QueuedAtClose(t *testing.T, srv *redistest.Server, n driver.Node) {
	t.Helper()
	q, queues := n.(driver.Queuer)
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
	// Calls, a millisecond apart, until two of them wait in the queue, or
	// eight are in flight on a node without one.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[string]error{}
	)
	defer wg.Wait()
	prefix := key(t)
	waiting := func(i int) bool {
		if queues {
			return q.Pending().Depth >= 2
		}
		return i == 8
	}
	for i := 0; !waiting(i); i++ {
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
	time.Sleep(50 * time.Millisecond) // the last calls reach the queue, or the server
	queued := 0
	if queues {
		queued = q.Pending().Depth
	}
	took, returned, err := boundedCall(ctx, func(context.Context) error { return n.Close() }, closeBound+stallBound)
	switch {
	case !returned:
		t.Fatalf("Close of a node with calls waiting on a server that does not answer had not returned %v later: Close must not wait for them", took)
	case took > closeBound:
		t.Errorf("Close of a node with calls waiting on a server that does not answer took %v, more than %v: Close must not wait for them", took, closeBound)
	case err != nil:
		t.Fatalf("Close() = %v, want nil", err)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(closeBound + stallBound):
		t.Errorf("calls still running %v after Close, whose context ends in %v: a call in flight or queued when its node is closed must end then", closeBound+stallBound, subtestTimeout)
		<-ended
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
