package redlock

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Do's error after an extension refused for good whose release failed too
// (refusedUnreleased) says "lock lost" once, and a context's error once,
// where errors.Join of the two said each twice; errors.Is and errors.As
// still find every part of both, each *NodeError and *VoteError included.
func TestRefusedUnreleasedTellsEachPartOnce(t *testing.T) {
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
			err := error(refusedUnreleased{refusal, release})
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

// causeList is an error of a type that == cannot compare (a slice in a
// struct), as a user's cause of a context's cancellation may be.
type causeList struct{ reasons []string }

func (e causeList) Error() string { return "canceled: " + strings.Join(e.reasons, ", ") }

// TestRefusedUnreleasedUncomparableParts: a part of each error of a type that
// == cannot compare (comparing two such interface values panics) is told,
// not compared: Error must not panic.
func TestRefusedUnreleasedUncomparableParts(t *testing.T) {
	cause := causeList{reasons: []string{"shutdown"}}
	err := refusedUnreleased{errors.Join(ErrLockLost, cause), errors.Join(ErrLockLost, causeList{reasons: []string{"shutdown"}})}
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

// TestRefusedUnreleasedComparableTypeUncomparableValue: a part of a type that
// reflect calls comparable can still hold a value that == cannot compare (an
// interface field holding a slice): Error must not panic on it either.
func TestRefusedUnreleasedComparableTypeUncomparableValue(t *testing.T) {
	err := refusedUnreleased{
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
