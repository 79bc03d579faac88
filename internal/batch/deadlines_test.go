package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
)

// At rounds a deadline up to a step, and hands out one context per step.
func TestDeadlinesAt(t *testing.T) {
	var d batch.Deadlines
	now := time.Now()
	t1 := now.Add(100 * time.Millisecond)
	c1 := d.At(t1)
	dl, ok := c1.Deadline()
	require.True(t, ok)
	require.False(t, dl.Before(t1), "the deadline is never earlier than asked")
	require.Less(t, dl.Sub(t1), batch.DeadlineStep, "and later by less than a step")
	require.Same(t, c1, d.At(t1), "the same step, the same context")
	c2 := d.At(dl.Add(time.Nanosecond))
	require.NotSame(t, c1, c2, "the next step, another context")
	dl2, _ := c2.Deadline()
	require.Equal(t, batch.DeadlineStep, dl2.Sub(dl))
}

// recorder is an Exec that records the context of each lone call.
type recorder struct{ ctxs []context.Context }

func (r *recorder) exec(ctx context.Context, calls []*batch.Call[int, int]) {
	r.ctxs = append(r.ctxs, ctx)
	for _, c := range calls {
		c.Res = c.Cmd
	}
}

// With ShareDeadlines, lone calls with a short network timeout share their
// deadline contexts, which carry none of the callers' values; a call with a
// longer network timeout, a caller's context that ends first, and a Batcher
// that does not share get contexts of their own, as before.
func TestShareDeadlines(t *testing.T) {
	base := context.WithValue(t.Context(), ctxKey{}, "mine")
	short := driver.WithNetworkTimeout(base, 100*time.Millisecond)

	rec := &recorder{}
	b := batch.New(rec.exec, 2, 8)
	b.ShareDeadlines()
	shared := false
	for i := 0; i < 100 && !shared; i++ {
		before := time.Now()
		_, err := b.Do(short, i)
		require.NoError(t, err)
		ctx := rec.ctxs[len(rec.ctxs)-1]
		require.Nil(t, ctx.Value(ctxKey{}), "a shared deadline carries no caller's values")
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		require.False(t, dl.Before(before.Add(100*time.Millisecond)), "never less than the network timeout")
		require.LessOrEqual(t, dl.Sub(time.Now().Add(100*time.Millisecond)), batch.DeadlineStep, "at most a step more")
		if n := len(rec.ctxs); n > 1 && rec.ctxs[n-2] == ctx {
			shared = true
		}
	}
	require.True(t, shared, "two calls in a row within a step share their context")

	// A network timeout near CancelLag: a context of its own, the caller's values kept.
	long := driver.WithNetworkTimeout(base, batch.CancelLag)
	_, err := b.Do(long, 1)
	require.NoError(t, err)
	require.Equal(t, "mine", rec.ctxs[len(rec.ctxs)-1].Value(ctxKey{}))

	// A caller's context that ends before the network timeout bounds the call itself.
	early, cancel := context.WithTimeout(short, 10*time.Millisecond)
	defer cancel()
	_, err = b.Do(early, 2)
	require.NoError(t, err)
	require.Equal(t, early, rec.ctxs[len(rec.ctxs)-1])

	// Without ShareDeadlines, every lone call keeps its caller's values.
	own := &recorder{}
	nb := batch.New(own.exec, 2, 8)
	_, err = nb.Do(short, 3)
	require.NoError(t, err)
	require.Equal(t, "mine", own.ctxs[0].Value(ctxKey{}))
	dl, ok := own.ctxs[0].Deadline()
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(100*time.Millisecond), dl, 100*time.Millisecond)
}

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
