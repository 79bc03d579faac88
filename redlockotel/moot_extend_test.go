package redlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// A Do whose function returns while one of its extensions is in flight
// releases the lock and cancels that extension: the Do succeeded, and the
// Extend span, which records the cancel, is not an error, as the logger does
// not warn of it ("extend canceled").
func TestMootExtendIsNoError(t *testing.T) {
	tel := newTelemetry(t)
	nodes := make([]driver.Node, 3)
	for i := range nodes {
		m := memory.New()
		m.SetLatency(100 * time.Millisecond) // an extension is in flight for a while
		nodes[i] = m
	}
	c, err := redlock.New(nodes, tel.option(), redlock.WithTTL(3*time.Second),
		redlock.WithExtendInterval(20*time.Millisecond), redlock.WithNodeTimeout(time.Second))
	require.NoError(t, err)
	defer c.Close()
	inFlight := func() bool {
		n := 0
		for _, s := range tel.spans.Started() {
			if s.Name() == "redlock.Extend" {
				n++
			}
		}
		for _, s := range tel.spans.Ended() {
			if s.Name() == "redlock.Extend" {
				n--
			}
		}
		return n > 0
	}
	err = c.Do(t.Context(), "moot", func(ctx context.Context) error {
		require.Eventually(t, inFlight, 5*time.Second, time.Millisecond, "an extension in flight")
		return nil
	})
	require.NoError(t, err)
	// The canceled extension ends on the keeper's goroutine, after Do.
	require.Eventually(t, func() bool { return !inFlight() }, 5*time.Second, time.Millisecond)
	moot := 0
	for _, s := range tel.spans.Ended() {
		if s.Name() != "redlock.Extend" {
			continue
		}
		assert.NotEqual(t, codes.Error, s.Status().Code, "an Extend of a Do that succeeded: %s", s.Status().Description)
		for _, e := range s.Events() {
			if e.Name == "exception" {
				moot++
			}
		}
	}
	assert.Equal(t, 1, moot, "the canceled extension's error is recorded")
}
