package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// A send cut short by its caller's own deadline, without a network timeout
// (as redlock's repeated releases are), got no answer from the server: it
// must not count as one. Here the server never answers: the send of a
// command with a network timeout that times out after it must fail the
// commands queued behind it, unsent, as on any server that has answered
// nothing. Counted as an answer, the first send kept the queue waiting on
// the stalled server.
func TestReviewTimeoutByCallerIsNoAnswer(t *testing.T) {
	e := &timeoutExec{first: make(chan struct{})}
	b := batch.New(e.exec, 1, 100)
	errc := make(chan error, 5)
	rctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	go func() {
		_, err := b.Do(rctx, 1)
		errc <- err
	}()
	<-e.first
	netCtx := driver.WithNetworkTimeout(t.Context(), time.Second)
	go func() {
		_, err := b.Do(netCtx, 2)
		errc <- err
	}()
	require.Error(t, <-errc, "the first send times out")
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.sent) == 2
	}, 5*time.Second, time.Millisecond, "the second command is sent once the first send ended")
	e.queuedFail(t, b, netCtx, errc, 3, []int{1, 2}, "the commands queued behind a server that never answered are not sent")
}
