package batch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A waiter that abandoned its place but had not yet taken itself out of the
// count when the last command in flight exited leaves nothing in flight: a
// newcomer that then finds it counted queues, and enters at once rather than
// waiting for an exit that will not come (found by an outside review: the
// newcomer waited out its deadline).
func TestGateNewcomerBehindAbandonedWaiter(t *testing.T) {
	g := NewGate(1)
	// The state the race leaves: nothing in flight, one waiter in the
	// queue, abandoned but still counted in depth.
	gone := &waiter{ready: make(chan error, 1)}
	gone.state.Store(abandoned)
	g.normal.push(gone)
	g.depth = 1
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, g.Enter(ctx), "the newcomer enters the free place")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Equal(t, 1, g.inFlight)
}
