package batch_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// A send cut short by its caller's own deadline, without a network timeout
// (as redlock's repeated releases are), got no answer from the server: it
// must not count as one. Here the server never answers, and a batch holds
// one command: the server is silent from the first send, cut short at
// 300ms; the second, with a network timeout of 1s, times out at 1.3s, the
// third at 2.3s, more than twice the timeout after the first send, and the
// commands queued behind it fail unsent. Counted as an answer, the first
// send kept the queue waiting on the stalled server for a send more (its
// silence counted from 300ms).
// It runs in a bubble (testing/synctest): the sends follow each other as
// on an idle machine.
func TestReviewTimeoutByCallerIsNoAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &timeoutExec{first: make(chan struct{})}
		b := batch.New(e.exec, 1, 1)
		errc := make(chan error, 5)
		rctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
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
		require.Error(t, <-errc, "the first send is cut short")
		synctest.Wait()
		e.mu.Lock()
		sent := len(e.sent)
		e.mu.Unlock()
		require.Equal(t, 2, sent, "the second command is sent once the first send ended")
		e.queuedFail(t, b, netCtx, errc, 3, 3, "the commands queued behind a server silent for more than twice the timeout are not sent")
	})
}
