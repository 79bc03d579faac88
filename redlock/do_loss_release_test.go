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

// faultyNodes returns n memory nodes, and the same nodes as faultyNodes
// whose extensions and releases fail with the errors stored in extendErrs
// and releaseErrs.
func faultyNodes(n int) (mem []*memory.Node, nodes []driver.Node, extendErrs, releaseErrs []atomic.Pointer[error]) {
	mem, _ = memNodes(n)
	extendErrs = make([]atomic.Pointer[error], n)
	releaseErrs = make([]atomic.Pointer[error], n)
	nodes = make([]driver.Node, n)
	for i, m := range mem {
		nodes[i] = faultyNode{m, &extendErrs[i], &releaseErrs[i]}
	}
	return mem, nodes, extendErrs, releaseErrs
}

// releaseFault is the error of the releases in TestDoLossWithFailedRelease.
var releaseFault = errors.New("READONLY You can't write against a read only replica.")

// Do after a loss whose release fails too returns both: the loss's cause (the
// extension's error: the refused extension's for refused_extend, which fn's
// context has as its cause too; the extension's that found the lock gone for
// lost_extend; the last extension's, which failed, for expired) and the
// release's error, with its votes and the nodes' errors. After a refused
// extension, Do returned only the release's error: why the lock was given up
// (NOPERM) was lost; after lost_extend and expired, it still was (the
// extension's votes, its nodes' timeouts).
func TestDoLossWithFailedRelease(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	noperm := errors.New("NOPERM User nopexpire has no permissions to run the 'pexpire' command")
	timeout := errors.New("i/o timeout")
	for _, tc := range []struct {
		name string
		// lose makes the lock lost at its next extension.
		lose  func(mem []*memory.Node, extendErrs []atomic.Pointer[error])
		cause string // in fn's context's cause, beside the loss
		// The extension's votes, the first in Do's error, and its nodes'
		// error (nil: none failed).
		refused, failed int
		nodeErr         error
	}{
		{"refused_extend", func(_ []*memory.Node, errs []atomic.Pointer[error]) {
			for i := range 2 {
				errs[i].Store(&noperm)
			}
		}, "NOPERM", 0, 2, noperm},
		{"lost_extend", func(mem []*memory.Node, _ []atomic.Pointer[error]) {
			time.Sleep(time.Second) // after the grant's last SET
			for _, m := range mem[:2] {
				m.Delete("k")
			}
		}, "", 2, 0, nil},
		{"expired", func(_ []*memory.Node, errs []atomic.Pointer[error]) {
			for i := range 2 {
				errs[i].Store(&timeout)
			}
		}, "", 0, 2, timeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes, extendErrs, releaseErrs := faultyNodes(3)
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
				}
				// Why the lock was lost, first: the extension's votes,
				// and its nodes' errors.
				var ve *redlock.VoteError
				require.ErrorAs(t, err, &ve)
				require.Equal(t, [2]int{tc.refused, tc.failed}, [2]int{ve.Refused, ve.Failed}, "the first votes in Do's error (refused, failed) are the extension's: %v", err)
				if tc.nodeErr != nil {
					require.ErrorIs(t, err, tc.nodeErr, "the extension's node errors")
				}
				// ErrUnavailable as the extension's votes say: the
				// release's, which every node failed, do not make a lock
				// found gone (lost_extend) an outage.
				require.Equal(t, ve.Failed > ve.Nodes-ve.Needed, errors.Is(err, redlock.ErrUnavailable), "errors.Is(err, ErrUnavailable) as the extension's votes say: %v", err)
				// The release's error after it: its votes, and the nodes'
				// errors.
				require.ErrorIs(t, err, releaseFault)
				var ne *redlock.NodeError
				require.ErrorAs(t, err, &ne)
				require.Contains(t, err.Error(), "the release then:\n0 of 3 nodes agreed, 2 needed (0 refused, 2 failed)", "the release's votes are told apart from the extension's")
				// The loss is told once, however many of its parts
				// match ErrLockLost: the extension's error and the
				// release's both do.
				require.Equal(t, 1, strings.Count(err.Error(), redlock.ErrLockLost.Error()), "Do's error says %q more than once: %q", redlock.ErrLockLost, err)
			})
		})
	}
}

// A lock held through Do whose extensions fail on a majority (a timeout)
// until its validity ends: fn returns at once, and Do's release, before the
// key's TTL has run out on the nodes, succeeds. Do's error says why the lock
// was lost, the last extension's error (its votes, the nodes' timeouts), as
// LockEnd.Err does for the observers, with or without them. Before, it was
// a bare "redlock: lock lost", with nothing of the extensions' failure.
func TestDoExpiredSaysWhy(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	timeout := errors.New("i/o timeout")
	for _, observed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unobserved", true: "observed"}[observed], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, nodes, extendErrs, _ := faultyNodes(3)
				opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithExtendInterval(every)}
				ends := &lockEnds{}
				if observed {
					opts = append(opts, redlock.WithObserver(ends))
				}
				c := newClient(t, nodes, opts...)
				var cause error
				err := c.Do(t.Context(), "k", func(ctx context.Context) error {
					for i := range 2 {
						extendErrs[i].Store(&timeout)
					}
					<-ctx.Done()
					cause = context.Cause(ctx)
					return nil
				})
				require.Equal(t, redlock.ErrLockLost, cause, "fn's context's cause")
				require.ErrorIs(t, err, redlock.ErrLockLost)
				var ve *redlock.VoteError
				require.ErrorAs(t, err, &ve, "Do's error has the last extension's votes: %v", err)
				require.Equal(t, [2]int{0, 2}, [2]int{ve.Refused, ve.Failed}, "the extension's votes (refused, failed): %v", err)
				require.ErrorIs(t, err, redlock.ErrUnavailable, "2 of 3 nodes failed the extension")
				require.ErrorIs(t, err, timeout, "the extension's node errors")
				require.NotContains(t, err.Error(), "the release then:", "the release succeeded: %v", err)
				require.Equal(t, 1, strings.Count(err.Error(), redlock.ErrLockLost.Error()), "Do's error says %q more than once: %q", redlock.ErrLockLost, err)
				synctest.Wait() // the release's last call, after its quorum
				require.Zero(t, holders(mem, "k"), "the release succeeded")
				if observed {
					e := ends.only(t)
					require.Equal(t, redlock.EndExpired, e.How)
					require.ErrorIs(t, err, e.Err, "Do's error tells the LockEnd's Err")
				}
			})
		})
	}
}
