package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// strandedSet is an in-process node whose SETs fail, as a SET that timed out
// on a stalled server does, while the command still waits in the server's
// socket: the node applies it right after the next release it gets, as a
// server would when that release came on another connection and was read
// first.
type strandedSet struct {
	*memory.Node
	mu      sync.Mutex
	pending func() // the stranded SET, applied after the next release
}

var errStranded = errors.New("i/o timeout (the SET still waits in the server's socket)")

func (n *strandedSet) SetNX(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	n.pending = func() { n.Node.SetNX(context.Background(), key, value, ttl) }
	n.mu.Unlock()
	return false, errStranded
}

// released applies the stranded SET, if any, after a release.
func (n *strandedSet) released() {
	n.mu.Lock()
	set := n.pending
	n.pending = nil
	n.mu.Unlock()
	if set != nil {
		set()
	}
}

func (n *strandedSet) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	defer n.released()
	return n.Node.EvalRelease(ctx, key, value)
}

func (n *strandedSet) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	defer n.released()
	return n.Node.ReleaseNotify(ctx, key, value)
}

// A node whose acquisition SET failed, and that answers Unlock's release
// with "not held", may still have that SET waiting in its socket, to be
// applied after the release: Unlock releases it once more in the background,
// so that the key does not stay there for a TTL. Before, it sent one
// release, and the node kept the key (here for the hour of the TTL), whether
// the acquisition's round was let go before Unlock or was still waiting for
// a slow node.
func TestUnlockReleasesNodeWithFailedSetTwice(t *testing.T) {
	for _, slow := range []bool{false, true} {
		name := "round let go"
		if slow {
			name = "round still running"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, _ := memNodes(5)
				nodes := make([]driver.Node, len(mem))
				for i, m := range mem {
					nodes[i] = m
				}
				stranded := &strandedSet{Node: mem[4]}
				nodes[4] = stranded
				if slow {
					nodes[3] = lateReplySet{Node: mem[3], delay: 50 * time.Millisecond, mu: new(sync.Mutex), got: new([]string)}
				}
				c := newClient(t, nodes, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(200*time.Millisecond))
				l, err := c.TryLock(t.Context(), "k")
				require.NoError(t, err)
				if !slow {
					synctest.Wait() // every call of the acquisition returned
				}
				require.NoError(t, l.Unlock(t.Context()))
				time.Sleep(time.Second)
				synctest.Wait()
				require.False(t, mem[4].Holds("k"), "the node whose SET failed keeps the key after Unlock: its stranded SET came after the only release")
				require.Zero(t, holders(mem, "k"))
			})
		})
	}
}
