package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// faultyNode is a memory node whose extensions and releases fail with the
// errors stored (nil: they work).
type faultyNode struct {
	*memory.Node
	extendErr, releaseErr *atomic.Pointer[error]
}

func (n faultyNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.extendErr.Load(); err != nil {
		return false, *err
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

func (n faultyNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if err := n.releaseErr.Load(); err != nil {
		return false, *err
	}
	return n.Node.EvalRelease(ctx, key, value)
}

func (n faultyNode) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if err := n.releaseErr.Load(); err != nil {
		return false, *err
	}
	return n.Node.ReleaseNotify(ctx, key, value)
}

// releaseFault is the error of the releases in TestDoLossWithFailedRelease.
var releaseFault = errors.New("READONLY You can't write against a read only replica.")

// Do after a loss whose release fails too returns both: the loss (its cause,
// as fn's context has it: the refused extension's error for refused_extend,
// ErrLockLost for lost_extend and expired) and the release's error, with its
// votes and the nodes' errors. After a refused extension, Do returned only
// the release's error: why the lock was given up (NOPERM) was lost.
func TestDoLossWithFailedRelease(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	noperm := errors.New("NOPERM User nopexpire has no permissions to run the 'pexpire' command")
	timeout := errors.New("i/o timeout")
	for _, tc := range []struct {
		name string
		// lose makes the lock lost at its next extension.
		lose  func(mem []*memory.Node, extendErrs []atomic.Pointer[error])
		cause string // in Do's error and fn's context's cause, beside the loss
	}{
		{"refused_extend", func(_ []*memory.Node, errs []atomic.Pointer[error]) {
			for i := range 2 {
				errs[i].Store(&noperm)
			}
		}, "NOPERM"},
		{"lost_extend", func(mem []*memory.Node, _ []atomic.Pointer[error]) {
			time.Sleep(time.Second) // after the grant's last SET
			for _, m := range mem[:2] {
				m.Delete("k")
			}
		}, ""},
		{"expired", func(_ []*memory.Node, errs []atomic.Pointer[error]) {
			for i := range 2 {
				errs[i].Store(&timeout)
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _ := memNodes(3)
				extendErrs := make([]atomic.Pointer[error], 3)
				releaseErrs := make([]atomic.Pointer[error], 3)
				nodes := make([]driver.Node, 3)
				for i, m := range mem {
					nodes[i] = faultyNode{m, &extendErrs[i], &releaseErrs[i]}
				}
				c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithExtendInterval(every))
				var cause error
				err := c.Do(t.Context(), "k", func(ctx context.Context) error {
					tc.lose(mem, extendErrs)
					<-ctx.Done()
					cause = context.Cause(ctx)
					for i := range releaseErrs {
						releaseErrs[i].Store(&releaseFault)
					}
					return nil
				})
				require.ErrorIs(t, cause, redlock.ErrLockLost)
				require.ErrorIs(t, err, redlock.ErrLockLost)
				require.ErrorIs(t, err, cause, "Do's error has fn's context's cause")
				if tc.cause != "" {
					require.ErrorContains(t, cause, tc.cause)
					require.ErrorContains(t, err, tc.cause, "Do's error says why the lock was given up")
				}
				// The release's error: its votes, which match
				// ErrUnavailable (every node failed), and the nodes' errors.
				var ve *redlock.VoteError
				require.ErrorAs(t, err, &ve)
				require.ErrorIs(t, err, redlock.ErrUnavailable)
				require.ErrorIs(t, err, releaseFault)
				var ne *redlock.NodeError
				require.ErrorAs(t, err, &ne)
				// The loss is told once, however many of its parts
				// match ErrLockLost: after a refused extension, the
				// extension's error and the release's both do.
				require.Equal(t, 1, strings.Count(err.Error(), redlock.ErrLockLost.Error()), "Do's error says %q more than once: %q", redlock.ErrLockLost, err)
				if tc.name == "refused_extend" {
					require.ErrorIs(t, err, noperm, "the refused extension's node errors")
					require.Contains(t, err.Error(), "the release then:", "the release's votes are told apart from the extension's")
				}
			})
		})
	}
}
