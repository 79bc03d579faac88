package redlockotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redlock"
)

// panicAttempt is an observer whose attempts' starts panic.
type panicAttempt struct{ redlock.NopObserver }

func (panicAttempt) Attempt(context.Context, redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	panic("broken observer")
}

// Every span started ends, when Do's function panics and when another
// observer's start panics.
func TestSpansEndOnPanics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other []redlock.Option
		run   func(c *redlock.Client)
	}{
		{"Do's function panics", nil, func(c *redlock.Client) {
			_ = c.Do(context.Background(), "k", func(context.Context) error { panic("boom") })
		}},
		{"another observer's start panics", []redlock.Option{redlock.WithObserver(panicAttempt{})}, func(c *redlock.Client) {
			_, _ = c.TryLock(context.Background(), "k")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			c, err := redlock.Open("memory", []string{t.Name() + "-1", t.Name() + "-2", t.Name() + "-3"}, append([]redlock.Option{tel.option()}, tc.other...)...)
			require.NoError(t, err)
			func() {
				defer func() { _ = recover() }()
				tc.run(c)
			}()
			require.NoError(t, c.Close())
			ended := map[string]bool{}
			for _, s := range tel.spans.Ended() {
				ended[s.SpanContext().SpanID().String()] = true
			}
			started := tel.spans.Started()
			require.NotEmpty(t, started)
			for _, s := range started {
				assert.True(t, ended[s.SpanContext().SpanID().String()], "span %s never ended", s.Name())
			}
		})
	}
}
