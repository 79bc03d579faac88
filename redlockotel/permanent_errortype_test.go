package redlockotel_test

import (
	"context"
	"errors"
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

// nopermAfter is a memory node that, while on is set, refuses every SET
// and extension with NOPERM after delay (the bubble's clock), as a server
// does to an ACL user that may not touch the key.
type nopermAfter struct {
	*memory.Node
	on    *atomic.Bool
	delay time.Duration
}

func (n nopermAfter) refuse(ctx context.Context) error {
	select {
	case <-time.After(n.delay):
		return errors.New("NOPERM No permissions to access a key")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n nopermAfter) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.on.Load() {
		return false, n.refuse(ctx)
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n nopermAfter) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.on.Load() {
		return false, n.refuse(ctx)
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// A call that failed because so many nodes answered an error that retrying
// cannot fix that no quorum was possible has the error.type of those
// errors (NOPERM), also when a node down, failing at once, answered before
// them: with three nodes, one down and two refusing NOPERM (1ms and 2ms
// late), an attempt, and Do's extension, now wait for the second refusal
// and stop (redlock's TestRefusalsOutDecide), and their errors join the
// down node's error first. error.type named that node's error (_OTHER for
// a memory node, the dial error's type for a server whose port is closed),
// so that a TryLock, a Lock or a Do that the nodes' ACLs refuse was not
// told by error.type=NOPERM, or only when the refusals came first.
func TestPermanentErrorTypeBesideDownNode(t *testing.T) {
	newNodes := func() ([]*memory.Node, *atomic.Bool, []driver.Node) {
		mem := []*memory.Node{memory.New(), memory.New(), memory.New()}
		on := new(atomic.Bool)
		return mem, on, []driver.Node{mem[0],
			nopermAfter{Node: mem[1], on: on, delay: time.Millisecond},
			nopermAfter{Node: mem[2], on: on, delay: 2 * time.Millisecond}}
	}
	errorTypes := func(tel *telemetry) map[string][]string {
		got := map[string][]string{} // span name: error.type of each
		for _, s := range tel.spans.Ended() {
			et, _ := attr(s.Attributes(), "error.type")
			got[s.Name()] = append(got[s.Name()], et.AsString())
		}
		return got
	}
	t.Run("acquisition", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tel := newTelemetry(t)
			mem, on, nodes := newNodes()
			mem[0].SetDown(true)
			on.Store(true)
			c, err := redlock.New(nodes, tel.option(), redlock.WithNodeTimeout(time.Second))
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err = c.TryLock(ctx, "k")
			require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
			_, err = c.Lock(ctx, "k")
			require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
			err = c.Do(ctx, "k", func(context.Context) error { return errors.New("must not run") })
			require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")
			require.NoError(t, ctx.Err(), "an acquisition waited for its context")

			got := errorTypes(tel)
			for _, name := range []string{"redlock.TryLock", "redlock.Lock", "redlock.Do"} {
				require.NotEmpty(t, got[name], "no %s span: %v", name, got)
				for _, et := range got[name] {
					assert.Equal(t, "NOPERM", et, "a %s span's error.type: %v", name, got)
				}
			}
			for _, p := range histogram(t, tel.metrics(t)["redlock.acquire.duration"]) {
				oc, _ := p.Attributes.Value("redlock.outcome")
				et, _ := p.Attributes.Value("error.type")
				assert.Equal(t, "error/NOPERM", oc.AsString()+"/"+et.AsString(), "a point of redlock.acquire.duration")
			}
		})
	})
	t.Run("extension", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tel := newTelemetry(t)
			mem, on, nodes := newNodes()
			c, err := redlock.New(nodes, tel.option(), redlock.WithNodeTimeout(time.Second), redlock.WithTTL(30*time.Second))
			require.NoError(t, err)
			defer c.Close()
			err = c.Do(t.Context(), "k", func(ctx context.Context) error {
				synctest.Wait() // every SET answered, before the faults
				mem[0].SetDown(true)
				on.Store(true)
				<-ctx.Done()
				return nil
			})
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorContains(t, err, "NOPERM, which retrying cannot fix")

			got := errorTypes(tel)
			assert.Equal(t, []string{"NOPERM"}, got["redlock.Do"], "the Do's span")
			assert.Equal(t, []string{"NOPERM"}, got["redlock.Extend"], "the refused extension's span")
			points := sum(t, tel.metrics(t)["redlock.lock.lost"])
			require.Len(t, points, 1)
			how, _ := points[0].Attributes.Value("redlock.lost.how")
			et, _ := points[0].Attributes.Value("error.type")
			assert.Equal(t, redlock.EndRefused+"/NOPERM", how.AsString()+"/"+et.AsString(), "redlock.lock.lost")
		})
	})
}
