package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Do's error after an extension refused for good whose release failed too
// (lostUnreleased) says "lock lost" once, and a context's error once,
// where errors.Join of the two said each twice; errors.Is and errors.As
// still find every part of both, each *NodeError and *VoteError included.
func TestLostUnreleasedTellsEachPartOnce(t *testing.T) {
	noperm := &NodeError{Addr: "n1", Err: errors.New("NOPERM no pexpire")}
	refusedVotes := &VoteError{Failed: 2, Needed: 2, Nodes: 3, Permanent: 2}
	readonly := &NodeError{Addr: "n2", Err: errors.New("READONLY replica")}
	releaseVotes := &VoteError{Failed: 3, Needed: 2, Nodes: 3, Permanent: 3}
	refusal := errors.Join(ErrLockLost, refusedVotes, noperm, context.Canceled)
	for name, release := range map[string]error{
		"votes":        errors.Join(ErrLockLost, releaseVotes, readonly, context.Canceled),
		"nested":       errors.Join(errors.Join(ErrLockLost, releaseVotes, readonly), context.Canceled),
		"not-released": errNotReleased,
	} {
		t.Run(name, func(t *testing.T) {
			err := error(lostUnreleased{refusal, release})
			text := err.Error()
			if n := strings.Count(text, ErrLockLost.Error()); n != 1 {
				t.Errorf("%q says %q %d times, want once", text, ErrLockLost, n)
			}
			if n := strings.Count(text, context.Canceled.Error()); n != 1 {
				t.Errorf("%q says %q %d times, want once", text, context.Canceled, n)
			}
			for _, part := range append(joinedLeaves(nil, refusal), joinedLeaves(nil, release)...) {
				if !errors.Is(err, part) {
					t.Errorf("errors.Is(err, %q) = false", part)
				}
				if !strings.Contains(text, strings.TrimPrefix(part.Error(), ErrLockLost.Error()+": ")) {
					t.Errorf("%q does not tell %q", text, part)
				}
			}
			for _, target := range []error{ErrLockLost, ErrUnavailable, ErrClosed, context.Canceled} {
				if errors.Is(errors.Join(refusal, release), target) != errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) differs from the two errors joined", target)
				}
			}
			var ne *NodeError
			if !errors.As(err, &ne) || ne != noperm {
				t.Errorf("errors.As(*NodeError) = %v, want the refusal's first, %v", ne, noperm)
			}
			var ve *VoteError
			if !errors.As(err, &ve) || ve != refusedVotes {
				t.Errorf("errors.As(*VoteError) = %v, want the refusal's, %v", ve, refusedVotes)
			}
		})
	}
}

// Do's error after a loss whose cause's votes do not match ErrUnavailable
// (an extension found the lock gone) and whose release then failed on every
// node matches ErrUnavailable as the cause's votes, the ones errors.As
// finds, say: no. The release's votes are still told, and errors.Is finds
// them.
func TestLostUnreleasedUnavailableAsTheCause(t *testing.T) {
	foundGone := &VoteError{Granted: 1, Refused: 2, Needed: 2, Nodes: 3}
	cause := errors.Join(ErrLockLost, foundGone)
	releaseVotes := &VoteError{Failed: 3, Needed: 2, Nodes: 3}
	timeout := &NodeError{Addr: "n1", Err: context.DeadlineExceeded}
	err := error(lostUnreleased{cause, errors.Join(ErrLockLost, releaseVotes, timeout)})
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("errors.Is(err, ErrUnavailable) = true, want the cause's verdict (%v): %v", foundGone, err)
	}
	var ve *VoteError
	if !errors.As(err, &ve) || ve != foundGone {
		t.Errorf("errors.As(*VoteError) = %v, want the cause's, %v", ve, foundGone)
	}
	for _, part := range []error{ErrLockLost, foundGone, releaseVotes, timeout, context.DeadlineExceeded} {
		if !errors.Is(err, part) {
			t.Errorf("errors.Is(err, %q) = false", part)
		}
	}
	if !strings.Contains(err.Error(), "the release then:\n"+releaseVotes.Error()) {
		t.Errorf("the release's votes are not told after the cause: %q", err)
	}
	// The other way round, the cause's votes say it: an outage.
	unavailable := errors.Join(ErrLockLost, &VoteError{Failed: 2, Needed: 2, Nodes: 3})
	if err := (lostUnreleased{unavailable, errors.Join(ErrLockLost, foundGone)}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("errors.Is(err, ErrUnavailable) = false, want the cause's verdict: %v", err)
	}
}

// causeList is an error of a type that == cannot compare (a slice in a
// struct), as a user's cause of a context's cancellation may be.
type causeList struct{ reasons []string }

func (e causeList) Error() string { return "canceled: " + strings.Join(e.reasons, ", ") }

// TestLostUnreleasedUncomparableParts: a part of each error of a type that
// == cannot compare (comparing two such interface values panics) is told,
// not compared: Error must not panic.
func TestLostUnreleasedUncomparableParts(t *testing.T) {
	cause := causeList{reasons: []string{"shutdown"}}
	err := lostUnreleased{errors.Join(ErrLockLost, cause), errors.Join(ErrLockLost, causeList{reasons: []string{"shutdown"}})}
	text := err.Error()
	if n := strings.Count(text, "canceled: shutdown"); n < 1 {
		t.Errorf("the cause is not told:\n%s", text)
	}
	if !errors.Is(err, ErrLockLost) {
		t.Errorf("errors.Is(err, ErrLockLost) = false:\n%s", text)
	}
}

// causeOf is an error of a type that reflect calls comparable (a struct of
// one interface field) but whose == panics when the field holds a value of a
// type that is not comparable, as a user's error that wraps causeList does.
type causeOf struct{ err error }

func (e causeOf) Error() string { return "because " + e.err.Error() }
func (e causeOf) Unwrap() error { return e.err }

// TestLostUnreleasedComparableTypeUncomparableValue: a part of a type that
// reflect calls comparable can still hold a value that == cannot compare (an
// interface field holding a slice): Error must not panic on it either.
func TestLostUnreleasedComparableTypeUncomparableValue(t *testing.T) {
	err := lostUnreleased{
		errors.Join(ErrLockLost, causeOf{causeList{reasons: []string{"shutdown"}}}),
		errors.Join(ErrLockLost, causeOf{causeList{reasons: []string{"shutdown"}}}),
	}
	text := err.Error()
	if n := strings.Count(text, "because canceled: shutdown"); n < 1 {
		t.Errorf("the cause is not told:\n%s", text)
	}
	var c causeOf
	if !errors.As(err, &c) {
		t.Errorf("errors.As(err, causeOf) = false:\n%s", text)
	}
}
