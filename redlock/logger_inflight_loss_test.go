package redlock_test

import (
	"context"
	"log/slog"
	"strings"
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

// failingExtendNode is a memory node whose extensions wait for gate and
// then fail (a connection that broke while the PEXPIRE waited for its
// reply); its other calls, Lock.TTL's among them, pass.
type failingExtendNode struct {
	*memory.Node
	gate chan struct{}
}

func (n failingExtendNode) Extend(context.Context, string, string, time.Duration) (bool, error) {
	<-n.gate
	return false, memory.ErrDown
}

// An Extend in flight when another call found the lock lost (Lock.TTL:
// a majority no longer holds the key), and that then fails on its own
// (its nodes' errors), is no warning: "redlock: lock lost" was logged at
// Warn, and WithLogger warns of a failed Extend only while the lock is
// still held (README: "not ... once the lock was found lost or
// unlocked"). It warned "redlock: extend failed" with validity_left of
// about a minute, for a lock already over, as it did before for an Extend
// begun after the loss (TestLoggerExtendAfterLossIsNoWarning): finishExtend
// said the lock was over (errOver) only when a quorum had extended it.
func TestLoggerExtendInFlightAtLossIsNoWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out syncbuf.Buffer
		logger := slog.New(slog.NewTextHandler(&out, nil)) // Info
		gate := make(chan struct{})
		mems := []*memory.Node{memory.New(), memory.New(), memory.New()}
		nodes := make([]driver.Node, len(mems))
		for i, m := range mems {
			nodes[i] = failingExtendNode{m, gate}
		}
		c, err := redlock.New(nodes, redlock.WithLogger(logger), redlock.WithTTL(time.Minute))
		require.NoError(t, err)
		defer c.Close()
		ctx := t.Context()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		extended := make(chan error, 1)
		go func() { extended <- l.Extend(ctx, time.Minute) }()
		synctest.Wait() // the Extend waits for its nodes
		mems[0].Delete("k")
		mems[1].Delete("k")
		_, err = l.TTL(ctx)
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.Contains(t, out.String(), `level=WARN msg="redlock: lock lost" key=k how=lost_ttl`)
		close(gate)
		require.ErrorIs(t, <-extended, redlock.ErrLockLost)
		require.True(t, time.Now().Before(l.Until()), "validity left on the lock's clock")
		assert.Equal(t, 1, strings.Count(out.String(), "\n"), "only the loss is a warning:\n%s", out.String())
	})
}
