package main

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-redlock/redlock/redlock"
)

// TestWithoutJoined pins what the command leaves of the library's errors
// when it drops the sentinels it tells otherwise: ErrLockLost (at the top
// only), the context.Canceled of a wait --wait ended and ErrNotObtained
// (both at any depth), each given back whole when nothing else is left but
// for ErrLockLost, which leaves nil.
func TestWithoutJoined(t *testing.T) {
	n1 := &redlock.NodeError{Addr: "n1", Err: errors.New("i/o timeout")}
	n2 := &redlock.NodeError{Addr: "n2", Err: errors.New("NOPERM no")}
	votes := &redlock.VoteError{Granted: 1, Failed: 2, Needed: 2, Nodes: 3}
	fnErr := errors.New("exit status 3")
	text := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	for _, tc := range []struct {
		name string
		got  error
		want error
	}{
		{"lost: bare", dropLost(redlock.ErrLockLost), nil},
		{"lost: other", dropLost(fnErr), fnErr},
		{"lost: joined", dropLost(errors.Join(fnErr, errors.Join(redlock.ErrLockLost, votes, n1))), fnErr},
		{"lost: unlock's", dropLost(errors.Join(redlock.ErrLockLost, votes, n1, n2)), errors.Join(votes, n1, n2)},
		{"lost: only", dropLost(errors.Join(redlock.ErrLockLost)), nil},
		{"canceled: bare", dropWaitCanceled(context.Canceled), context.Canceled},
		{"canceled: joined", dropWaitCanceled(errors.Join(votes, n1, context.Canceled)), errors.Join(votes, n1)},
		{"canceled: nested", dropWaitCanceled(errors.Join(votes, errors.Join(n1, context.Canceled))), errors.Join(votes, n1)},
		{"canceled: in a verdict", dropWaitCanceled(errors.Join(errors.Join(votes, n1, n2, context.Canceled))), errors.Join(votes, n1, n2)},
		{"canceled: only", dropWaitCanceled(errors.Join(context.Canceled)), errors.Join(context.Canceled)},
		{"not obtained: bare", dropNotObtained(redlock.ErrNotObtained), redlock.ErrNotObtained},
		{"not obtained: joined", dropNotObtained(errors.Join(redlock.ErrNotObtained, votes, n1)), errors.Join(votes, n1)},
		{"not obtained: nested", dropNotObtained(errors.Join(errors.Join(redlock.ErrNotObtained, votes), n2)), errors.Join(votes, n2)},
		{"not obtained: nested only", dropNotObtained(errors.Join(errors.Join(redlock.ErrNotObtained), n2)), n2},
		{"not obtained: only", dropNotObtained(errors.Join(redlock.ErrNotObtained)), errors.Join(redlock.ErrNotObtained)},
	} {
		if text(tc.got) != text(tc.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, text(tc.got), text(tc.want))
		}
	}
}

// The three uses of withoutJoined, as the command makes them.
func dropLost(err error) error { return withoutJoined(err, isLockLost, false) }
func dropWaitCanceled(err error) error {
	return cmp.Or(withoutJoined(err, isCanceled, true), err)
}
func dropNotObtained(err error) error {
	return cmp.Or(withoutJoined(err, isNotObtained, true), err)
}

// TestWaitOverSaysNoNestedCanceled: the error of a wait that --wait ended,
// whose last attempt was judged after the wait's context had ended, has
// the context's context.Canceled within that attempt's verdict (the
// library's acquisition joins its round's error, which joins ctx.Err(),
// once more), not at the top of Lock's error: run's line ended with
// "context canceled" (TestRunWaitOverSaysNoContextCanceled, 1 of 8 runs
// beside four CPU-spinning processes, the attempt's calls timed out at the
// wait's end). It says only what the wait's end and the nodes did.
func TestWaitOverSaysNoNestedCanceled(t *testing.T) {
	n1 := &redlock.NodeError{Addr: "n1", Err: context.DeadlineExceeded}
	n2 := &redlock.NodeError{Addr: "n2", Err: context.DeadlineExceeded}
	votes := &redlock.VoteError{Granted: 1, Failed: 2, Needed: 2, Nodes: 3}
	o := &lockFlags{key: "k", wait: 500 * time.Millisecond, waitSet: true, conflictCode: exitConflict}
	for name, err := range map[string]error{
		"at the top":     errors.Join(errors.Join(redlock.ErrNotObtained, votes, n1, n2), context.Canceled),
		"in the verdict": errors.Join(errors.Join(redlock.ErrNotObtained, votes, n1, n2, context.Canceled)),
	} {
		got := notObtained("run", o, err, errWaitOver)
		if msg := got.Error(); strings.Contains(msg, "context canceled") || !strings.Contains(msg, "too many nodes failed") {
			t.Errorf("%s: the wait's line says %q, want the nodes' failure and no context canceled", name, msg)
		}
	}
}
