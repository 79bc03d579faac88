package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// gatedRelease holds every release sent to its node until gate is closed,
// and counts them.
type gatedRelease struct {
	*memory.Node
	gate <-chan struct{}
	sent *atomic.Int32
}

func (n gatedRelease) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.sent.Add(1)
	select {
	case <-n.gate:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return n.Node.EvalRelease(ctx, key, value)
}

// A failed attempt releases the key on the nodes that granted it, and waits
// for them, but sends nothing to the nodes that refused it: a refusal is
// definite (package driver's contract), the key there is another's, and a
// waiter whose attempt a release overtook (a poll in flight as the holder
// unlocked) would otherwise spend a round trip on such releases before it
// could try again, and load the nodes meanwhile.
func TestFailedAttemptReleasesOnlyWhatItMayHold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		heldOn   int   // nodes where another holds the key
		releases int32 // releases sent by the failed attempt
		mustWait bool  // TryLock waits for the gated releases
	}{
		{name: "every node refused", heldOn: 5, releases: 0, mustWait: false},
		{name: "two nodes granted", heldOn: 3, releases: 2, mustWait: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _ := memNodes(5)
				for _, m := range mem[:tc.heldOn] {
					ok, err := m.SetNX(t.Context(), "k", "another's", time.Minute)
					require.NoError(t, err)
					require.True(t, ok)
				}
				gate, refusals := make(chan struct{}), make(chan struct{})
				var sent atomic.Int32
				nodes := make([]driver.Node, len(mem))
				for i, m := range mem {
					nodes[i] = gatedRelease{Node: m, gate: gate, sent: &sent}
					if i < tc.heldOn {
						// The refusals come once the grants are counted,
						// which the attempt then waits for.
						nodes[i] = lateSetNX{Node: nodes[i], gate: refusals}
					}
				}
				c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(10*time.Second))
				require.NoError(t, err)
				defer c.Close()

				var returned atomic.Bool
				done := make(chan error, 1)
				go func() {
					_, err := c.TryLock(t.Context(), "k")
					returned.Store(true)
					done <- err
				}()
				synctest.Wait() // the grants counted
				close(refusals)
				synctest.Wait() // every goroutine blocked: on the gate, or TryLock returned
				assert.Equal(t, tc.releases, sent.Load(), "releases sent: one to each node that granted it")
				assert.Equal(t, !tc.mustWait, returned.Load(), "TryLock returned while the releases were held")
				close(gate)
				require.ErrorIs(t, <-done, redlock.ErrNotObtained)
				synctest.Wait()
				assert.Equal(t, tc.heldOn, holders(mem, "k"), "the failed attempt's grants were released, another's keys kept")
				assert.Equal(t, tc.releases, sent.Load(), "no release sent later")
			})
		})
	}
}

// lateSetNX holds its node's SETs until gate is closed.
type lateSetNX struct {
	driver.Node
	gate <-chan struct{}
}

func (n lateSetNX) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	select {
	case <-n.gate:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// A node whose SET answers after the attempt failed gets a release only if
// it did not refuse: its late refusal, like the others, is definite.
func TestFailedAttemptLateRefusalGetsNoRelease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lateHeld bool  // another holds the key on the late node too
		releases int32 // releases sent to the late node
	}{
		{name: "late refusal", lateHeld: true, releases: 0},
		{name: "late grant", lateHeld: false, releases: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _ := memNodes(5)
				held := mem[:3] // three refusals decide the attempt lost
				if tc.lateHeld {
					held = mem[:4]
				}
				for _, m := range held {
					ok, err := m.SetNX(t.Context(), "k", "another's", time.Minute)
					require.NoError(t, err)
					require.True(t, ok)
				}
				open := make(chan struct{})
				close(open)
				setGate := make(chan struct{})
				var sent atomic.Int32
				nodes := make([]driver.Node, len(mem))
				for i, m := range mem {
					nodes[i] = gatedRelease{Node: m, gate: open, sent: new(atomic.Int32)}
				}
				nodes[3] = lateSetNX{Node: gatedRelease{Node: mem[3], gate: open, sent: &sent}, gate: setGate}
				c, err := redlock.New(nodes, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(10*time.Second))
				require.NoError(t, err)
				defer c.Close()

				_, err = c.TryLock(t.Context(), "k")
				require.ErrorIs(t, err, redlock.ErrNotObtained, "three refusals before node 3 answered")
				close(setGate) // node 3's SET lands now, after the verdict
				synctest.Wait()
				assert.Equal(t, tc.releases, sent.Load(), "releases sent to the late node")
				assert.Equal(t, len(held), holders(mem, "k"), "only another's keys left")
			})
		})
	}
}
