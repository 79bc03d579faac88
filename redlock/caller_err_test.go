package redlock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pastDeadline is a context whose deadline has passed but whose timer has
// not fired yet: Err is still nil, as a real context's is for a moment.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A round's error has context.DeadlineExceeded when the caller's deadline
// had passed at its verdict, though ctx.Err() was still nil: the round had
// counted the nodes' errors at that deadline as the caller's ("0 failed"),
// and its error said nothing of the context, which ended a moment later
// (TestErrorContractUnderFaults/38 in a clean-clone CI run: "ctx had ended
// when the call returned (context deadline exceeded), its error does not
// have it").
func TestRoundErrAtPassedDeadline(t *testing.T) {
	ctx := pastDeadline{context.Background()}
	if !callerEnded(ctx) {
		t.Fatal("callerEnded of a context past its deadline = false")
	}
	c := &Client{names: []string{"a"}, quorum: 1}
	r := &round{c: c, state: make([]uint8, 1)}
	err := r.err(ctx, ErrNotObtained)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Errorf("round.err at a passed deadline = %v; want ErrNotObtained and context.DeadlineExceeded", err)
	}
	if err := r.err(context.Background(), ErrNotObtained); errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("round.err without a deadline = %v; want no context error", err)
	}
}
