package ctxend

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

func TestErr(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	running, stop := context.WithTimeout(context.Background(), time.Hour)
	defer stop()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"running", context.Background(), nil},
		{"deadline ahead", running, nil},
		{"canceled", canceled, context.Canceled},
		{"deadline passed, timer not fired", pastDeadline{context.Background()}, context.DeadlineExceeded},
	} {
		if got := Err(tc.ctx); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: Err = %v, want %v", tc.name, got, tc.want)
		}
	}
}
