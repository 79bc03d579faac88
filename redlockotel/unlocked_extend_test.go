package redlockotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// An Extend in flight when the holder's own Unlock runs (a keeper of the
// caller's, as Do's is, that extends while the work ends) fails with
// ErrAlreadyUnlocked: the lock was released, not lost, and the logger calls
// it "extend after unlock" at Debug. Its span records the error without
// Error status, as a canceled extension of Do's does; it was an Error span.
func TestExtendRacingOwnUnlockIsNoError(t *testing.T) {
	tel := newTelemetry(t)
	nodes := make([]driver.Node, 3)
	mems := make([]*memory.Node, 3)
	for i := range nodes {
		mems[i] = memory.New()
		nodes[i] = mems[i]
	}
	c, err := redlock.New(nodes, tel.option(), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(5*time.Second))
	require.NoError(t, err)
	defer c.Close()
	l, err := c.TryLock(t.Context(), "racing")
	require.NoError(t, err)
	for _, m := range mems {
		m.SetLatency(300 * time.Millisecond) // the Extend is in flight for a while
	}
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(t.Context(), 10*time.Second) }()
	require.Eventually(t, func() bool {
		for _, s := range tel.spans.Started() {
			if s.Name() == "redlock.Extend" {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the Extend started")
	require.NoError(t, l.Unlock(t.Context()))
	err = <-extended
	require.ErrorIs(t, err, redlock.ErrAlreadyUnlocked)
	n := 0
	for _, s := range tel.spans.Ended() {
		if s.Name() != "redlock.Extend" {
			continue
		}
		n++
		assert.NotEqual(t, codes.Error, s.Status().Code, "an Extend that the holder's Unlock overtook: %s", s.Status().Description)
		recorded := false
		for _, e := range s.Events() {
			recorded = recorded || e.Name == "exception"
		}
		assert.True(t, recorded, "its error is recorded")
	}
	assert.Equal(t, 1, n)
}
