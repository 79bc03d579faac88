package untildone

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A call that outlives its context: Do returns ctx's error at the context's
// end, and late gets the call's result once it comes.
func TestDoReturnsAtContextEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		lateGot := make(chan int, 1)
		v, err := Do(ctx, func() (int, error) {
			time.Sleep(5 * time.Second) // a dial that ignores ctx
			return 7, nil
		}, func(v int, err error) { lateGot <- v })
		if !errors.Is(err, context.DeadlineExceeded) || v != 0 {
			t.Fatalf("Do: %d, %v; want 0 and the context's error", v, err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("Do returned after %v, want the context's 1s", took)
		}
		if got := <-lateGot; got != 7 || time.Since(start) != 5*time.Second {
			t.Fatalf("late got %d after %v, want 7 after 5s", got, time.Since(start))
		}
	})
}

// A call that returns in time gives its result, and so does one whose
// context cannot end.
func TestDoResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		want := errors.New("refused")
		v, err := Do(ctx, func() (string, error) { return "x", want }, nil)
		if v != "x" || err != want {
			t.Fatalf("Do: %q, %v; want \"x\", %v", v, err, want)
		}
	})
	calls := 0
	v, err := Do(context.Background(), func() (int, error) { calls++; return calls, nil }, nil)
	if v != 1 || err != nil || calls != 1 {
		t.Fatalf("Do with a context that cannot end: %d, %v", v, err)
	}
}
