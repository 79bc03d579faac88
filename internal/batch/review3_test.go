package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// At rounds a deadline up to a step also when it falls before the first one
// it was asked for (the base its steps count from): a later call with a
// shorter network timeout. Integer division truncates toward zero, which for
// a negative offset from the base rounds down the quotient's magnitude: the
// deadline handed out is then up to two steps after t.
func TestReview3DeadlinesAtBeforeBase(t *testing.T) {
	var d batch.Deadlines
	now := time.Now()
	d.At(now.Add(200 * time.Millisecond)) // sets the base
	for _, back := range []time.Duration{3 * time.Millisecond, 8 * time.Millisecond, 12 * time.Millisecond} {
		t2 := now.Add(200*time.Millisecond - back)
		dl, ok := d.At(t2).Deadline()
		require.True(t, ok)
		require.False(t, dl.Before(t2), "never earlier than asked")
		require.Less(t, dl.Sub(t2), batch.DeadlineStep, "%v before the base: later than asked by less than a step", back)
	}
}

// A lone call whose caller's context ends after its network deadline, but
// within the step that deadline is rounded up to, must not run past the
// caller's deadline: bound promises ctx itself "when it ends first", and the
// goredis package documents that "a call returns when its context's deadline
// passes". With a shared deadline rounded up past the caller's, the call
// outlives its caller's deadline by up to a step, and a server that does not
// answer then looks like a call cut short by its caller (cutShort), not a
// network timeout.
func TestReview3SharedDeadlineNotAfterCallers(t *testing.T) {
	rec := &recorder{}
	b := batch.New(rec.exec, 2, 8)
	b.ShareDeadlines()
	const d = 100 * time.Millisecond
	_, err := b.Do(driver.WithNetworkTimeout(t.Context(), d), 0) // sets the Deadlines' base
	require.NoError(t, err)
	for i := range 20 {
		time.Sleep(time.Millisecond) // moves t off the base's steps
		callerDL := time.Now().Add(d + time.Millisecond)
		ctx, cancel := context.WithDeadline(t.Context(), callerDL)
		_, err := b.Do(driver.WithNetworkTimeout(ctx, d), i)
		cancel()
		require.NoError(t, err)
		got, ok := rec.ctxs[len(rec.ctxs)-1].Deadline()
		require.True(t, ok)
		require.False(t, got.After(callerDL), "call %d: the call's deadline %v is after its caller's by %v",
			i, got.Format("15:04:05.000000"), got.Sub(callerDL))
	}
}
