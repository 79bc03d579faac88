package driver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
)

func TestContextError(t *testing.T) {
	errNet := errors.New("i/o timeout")
	if got := driver.ContextError(context.Background(), nil); got != nil {
		t.Errorf("ContextError(nil) = %v, want nil", got)
	}
	if got := driver.ContextError(context.Background(), errNet); got != errNet {
		t.Errorf("ContextError(live ctx, err) = %v, want err itself", got)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if got := driver.ContextError(canceled, errNet); !errors.Is(got, context.Canceled) || !errors.Is(got, errNet) {
		t.Errorf("ContextError(canceled, err) = %v, want both context.Canceled and err in the chain", got)
	}
	if got := driver.ContextError(canceled, context.Canceled); got != context.Canceled {
		t.Errorf("ContextError(canceled, context.Canceled) = %v, want it unchanged", got)
	}
	// The deadline passed, but the context's timer has not fired yet.
	got := driver.ContextError(pastDeadline{context.Background()}, errNet)
	if !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("ContextError(deadline passed, err) = %v, want context.DeadlineExceeded in the chain", got)
	}
}

// pastDeadline is a context whose deadline has passed but that does not say so
// yet, as happens between a socket deadline firing and the context's timer.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
