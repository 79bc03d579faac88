package redlock_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// lateReplySet is an in-process node whose SETs answer after a delay, and which
// records how it was released: "notify" for ReleaseNotify (a release that
// publishes, as Unlock's round sends), "plain" for EvalRelease (a repeated
// release in the background).
type lateReplySet struct {
	*memory.Node
	delay time.Duration
	mu    *sync.Mutex
	got   *[]string
}

func (n lateReplySet) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	time.Sleep(n.delay)
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n lateReplySet) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	*n.got = append(*n.got, "plain")
	n.mu.Unlock()
	return n.Node.EvalRelease(ctx, key, value)
}

func (n lateReplySet) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	*n.got = append(*n.got, "notify")
	n.mu.Unlock()
	return n.Node.ReleaseNotify(ctx, key, value)
}

// lateSets wraps mem in lateReplySet nodes whose SETs answer after delay
// from the fourth node on, after the quorum of five; it returns them with
// the record of their releases (got[i], guarded by mu).
func lateSets(mem []*memory.Node, delay time.Duration) (nodes []driver.Node, mu *sync.Mutex, got [][]string) {
	nodes = make([]driver.Node, len(mem))
	mu, got = new(sync.Mutex), make([][]string, len(mem))
	for i, m := range mem {
		d := time.Duration(0)
		if i >= 3 {
			d = delay
		}
		nodes[i] = lateReplySet{Node: m, delay: d, mu: mu, got: &got[i]}
	}
	return nodes, mu, got
}

// A SET that had not answered when the lock was granted is released by
// Unlock's own call for its node once it answers within the node timeout:
// one release, which publishes (waiters there are woken), and the key is
// gone from every node.
func TestUnlockReleasesLateSetsInItsRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(5)
		nodes, mu, got := lateSets(mem, 20*time.Millisecond) // granted after the quorum
		c := newClient(t, nodes, redlock.WithNodeTimeout(200*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Zero(t, holders(mem, "k"))
		mu.Lock()
		defer mu.Unlock()
		for i := range got {
			assert.Equal(t, []string{"notify"}, got[i], "node %d", i)
		}
	})
}

// A node whose SET failed after the grant is not sent Unlock's release in
// its round (the release goes on in the background, once the node has
// answered): the observers see no NodeCall for a call that was not made,
// as they see none for the extensions the keeper does not send.
func TestUnlockReportsNoCallForUnansweredSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(5)
		nodes, _, _ := lateSets(mem, 500*time.Millisecond) // past the node timeout: the SET fails
		rec := &recorder{id: "r"}
		c := newClient(t, nodes, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithObserver(rec))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		time.Sleep(time.Second)
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		releases := 0
		for _, e := range rec.nodes {
			if e.Operation != redlock.OpRelease {
				continue
			}
			releases++
			if e.Err != nil && strings.Contains(e.Err.Error(), "its SET had not answered") {
				t.Errorf("NodeCall %+v: a release that was not sent reported as a call", e)
			}
		}
		if releases < 3 {
			t.Errorf("%d release NodeCalls, want at least the 3 of the nodes that granted", releases)
		}
	})
}

// While the SETs that had not answered at the grant are late, no goroutine
// waits for them on Unlock's behalf: the call that gets a late reply runs
// Unlock's release of that node itself. Before, each Unlock with late SETs
// left a goroutine reading their replies and parked a worker per late node
// until its SET answered (with two of five nodes 40ms away, three goroutines
// and their wakes per lock+unlock; bench/RESULTS.md, Far). The releases
// still follow the SETs, one each, as TestUnlockReleasesLateSetsInItsRound
// checks.
func TestUnlockParksNoGoroutineForLateSets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(5)
		nodes, mu, got := lateSets(mem, 20*time.Millisecond) // granted after the quorum
		c := newClient(t, nodes, redlock.WithNodeTimeout(200*time.Millisecond))
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.NoError(t, l.Unlock(t.Context()))
		synctest.Wait() // every goroutine of the bubble blocked: the late SETs sleep
		buf := make([]byte, 1<<20)
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		inSet, forUnlock := 0, 0
		for _, s := range stacks {
			switch {
			case strings.Contains(s, "lateReplySet.SetNX"):
				inSet++
			case strings.Contains(s, "redlock.(*lateSets)"), strings.Contains(s, "followLateSets"),
				strings.Contains(s, "redlock.(*Lock).unlock"):
				forUnlock++
				t.Logf("waits for Unlock:\n%s", s)
			}
		}
		assert.Equal(t, 2, inSet, "goroutines in the late SETs")
		assert.Zero(t, forUnlock, "goroutines waiting for the late SETs on Unlock's behalf")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Zero(t, holders(mem, "k"))
		mu.Lock()
		defer mu.Unlock()
		for i := range got {
			assert.Equal(t, []string{"notify"}, got[i], "node %d", i)
		}
	})
}
