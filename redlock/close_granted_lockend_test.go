package redlock_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// grantCounter counts the acquisition attempts that were granted, beside
// the LockEnds of lockEnds: each grant has one LockEnd.
type grantCounter struct {
	lockEnds
	granted atomic.Int32
}

func (o *grantCounter) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	return ctx, func(d redlock.AttemptDone) {
		if d.Outcome == redlock.OutcomeGranted {
			o.granted.Add(1)
		}
	}
}

// A Do granted its lock only after Close released the locks of Do (see
// TestCloseDoGrantedAfterCloseTells) is lost to Close: its observers hear
// its end, once, as EndClosed, and WithLogger warns of it, as of every
// lock lost. Observer.LockEnd: "called once per granted lock"; EndClosed:
// "Client.Close stopped the extensions of a lock held through Do before its
// function returned (Do returns ErrLockLost)". Before, no LockEnd came at
// all: the lock was ended as EndClosed (keeper.give) but that end was
// reported only by an Unlock, and Do sends none once Close is closing the
// nodes. So redlockotel's redlock.locks.held kept the lock for ever, and
// neither redlock.lock.lost nor the log told the loss.
func TestCloseDoGrantedAfterCloseLockEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &grantCounter{}
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, nil)) // Info and above
		err, _, _ := doGrantedAfterClose(t, redlock.WithObserver(obs), redlock.WithLogger(logger))
		require.ErrorIs(t, err, redlock.ErrLockLost)
		require.ErrorIs(t, err, redlock.ErrClosed, "the lock was not released")
		synctest.Wait()
		require.EqualValues(t, 1, obs.granted.Load(), "the Do's attempt was granted")
		e := obs.only(t)
		require.Equal(t, redlock.EndClosed, e.How)
		require.ErrorIs(t, e.Err, redlock.ErrClosed)
		lostLine(t, logs.String())
	})
}
