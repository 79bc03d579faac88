package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// failingExtend is a memory node whose extensions all fail with err (nil:
// they work), each asked counted in asked.
type failingExtend struct {
	*memory.Node
	err   *atomic.Pointer[error]
	asked *atomic.Int32
}

func (n failingExtend) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.asked.Add(1)
	if err := n.err.Load(); err != nil {
		return false, *err
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// refusalObserver records the lock's ends and the extensions that found it
// lost.
type refusalObserver struct {
	redlock.NopObserver
	mu        sync.Mutex
	ends      []string
	endErrs   []error // LockEnd.Err, by end
	lostTold  int
	extFailed int
}

func (o *refusalObserver) LockEnd(_ context.Context, e redlock.LockEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends = append(o.ends, e.How)
	o.endErrs = append(o.endErrs, e.Err)
}

func (o *refusalObserver) Extend(ctx context.Context, _ redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return ctx, func(d redlock.ExtendDone) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if d.Err != nil {
			o.extFailed++
		}
		if d.Lost {
			o.lostTold++
		}
	}
}

// TestKeeperStopsOnPermanentExtendError: Do's extensions that two nodes of
// three refuse with an error retrying cannot fix (NOPERM: an ACL user
// without +pexpire) were retried every TTL/12 until the validity ended, a
// TTL after the grant, the function working on meanwhile with a lock that
// nothing could extend (and an ACL LOG entry per refusal). The keeper now
// gives the lock up at the first such extension: fn's context is canceled
// then, with a cause that matches ErrLockLost and names NOPERM, the
// observers hear EndRefused and an extension that found it lost, nothing
// more is asked of the nodes, and Do returns the cause. Nodes that fail
// with a transient error are still retried until the validity ends.
func TestKeeperStopsOnPermanentExtendError(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	noperm := errors.New("NOPERM User nopexpire has no permissions to run the 'pexpire' command")
	transient := errors.New("i/o timeout")
	run := func(t *testing.T, fault error) (canceledAfter time.Duration, cause, doErr error, asked int32, o *refusalObserver) {
		errs := make([]atomic.Pointer[error], 3)
		counts := make([]atomic.Int32, 3)
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = failingExtend{memory.New(), &errs[i], &counts[i]}
		}
		o = &refusalObserver{}
		c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every), redlock.WithObserver(o))
		doErr = c.Do(t.Context(), "k", func(ctx context.Context) error {
			for i := range 2 {
				errs[i].Store(&fault)
			}
			start := time.Now()
			<-ctx.Done()
			canceledAfter, cause = time.Since(start), context.Cause(ctx)
			return nil
		})
		return canceledAfter, cause, doErr, counts[0].Load() + counts[1].Load(), o
	}
	t.Run("Permanent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			after, cause, doErr, asked, o := run(t, noperm)
			require.Equal(t, every, after, "fn's context canceled %v after the grant, want at the first extension (%v), not at the validity's end", after, every)
			require.ErrorIs(t, cause, redlock.ErrLockLost)
			require.ErrorContains(t, cause, "NOPERM")
			require.ErrorIs(t, doErr, redlock.ErrLockLost)
			require.ErrorContains(t, doErr, "NOPERM")
			require.Equal(t, 1, strings.Count(doErr.Error(), redlock.ErrLockLost.Error()), "Do's error tells the loss once:\n%v", doErr)
			require.Equal(t, int32(2), asked, "extensions asked of the two nodes that refuse them with NOPERM")
			require.Equal(t, []string{redlock.EndRefused}, o.ends)
			// LockEnd.Err is the refused extension's error: why.
			require.ErrorIs(t, o.endErrs[0], redlock.ErrLockLost)
			require.ErrorContains(t, o.endErrs[0], "NOPERM")
			require.Equal(t, 1, o.lostTold, "extensions that found the lock lost")
			require.Equal(t, 1, o.extFailed, "failed extensions")
		})
	})
	t.Run("Transient", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			after, cause, doErr, asked, o := run(t, transient)
			require.Greater(t, after, ttl-every, "fn's context canceled %v after the grant: a transient failure is retried while the validity lasts", after)
			require.ErrorIs(t, cause, redlock.ErrLockLost)
			require.ErrorIs(t, doErr, redlock.ErrLockLost)
			require.Greater(t, asked, int32(2*3), "extensions asked of the two failing nodes")
			require.Equal(t, []string{redlock.EndExpired}, o.ends)
			require.ErrorContains(t, o.endErrs[0], "i/o timeout", "LockEnd.Err: the last extension's failure")
			require.Equal(t, 0, o.lostTold, "extensions that found the lock lost")
		})
	})
}
