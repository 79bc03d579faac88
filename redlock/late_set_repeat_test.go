package redlock_test

import (
	"context"
	"runtime"
	"strings"
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

// pausedServer is a memory node whose releases, while the server is paused,
// never reach it: they wait for their context and fail, as a pooled client's
// release does on a new connection whose handshake the paused server never
// answers (SAFETY.md, scenario 6). The SETs and PEXPIREs sent before the
// pause wait in the store (memory.Node.SetStalled) and are applied when it
// resumes; the releases sent meanwhile are not.
type pausedServer struct {
	*memory.Node
	paused *atomic.Bool
	// overrun delays a SET's reply past its call's bound, as a client that
	// notices its timeout late does.
	overrun time.Duration
}

func (n pausedServer) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := n.Node.SetNX(ctx, key, value, ttl)
	time.Sleep(n.overrun)
	return ok, err
}

func (n pausedServer) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if n.paused.Load() {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return n.Node.EvalRelease(ctx, key, value)
}

func (n pausedServer) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if n.paused.Load() {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return n.Node.ReleaseNotify(ctx, key, value)
}

// pause pauses or resumes the server of n (mem): on resume, the store applies
// the calls it held, in the order they came, before a release sent meanwhile
// gets through (a new connection's handshake is answered after that).
func (n pausedServer) pause(mem *memory.Node, paused bool) {
	if paused {
		n.paused.Store(true)
		mem.SetStalled(true)
		return
	}
	mem.SetStalled(false)
	n.paused.Store(false)
}

// The release of a node whose acquisition SET had not answered when Unlock
// began, and then failed, is repeated as long as Unlock's doc says a failed
// release is: up to the key's expiry plus the longest Extend TTL, since an
// Extend's PEXPIRE that failed on that node may wait there behind the SET.
// Node 4 is paused before the acquisition: its SET, then an Extend's
// PEXPIRE (10s; the lock's TTL is 1s), wait in it; Unlock begins before the
// SET fails; the node resumes 15s later, after the key's expiry (10s after
// the Extend began) and before the expiry plus the Extend's TTL (20s), and
// applies the SET and the PEXPIRE, none of the releases sent while it was
// paused. A repeat must then release the key: before, the repeats ended at
// the later of the expiry and a TTL after the SET's failure (10s), and the
// key stayed on the node for the PEXPIRE's 10s after the resume. The SET's
// failure reaches Unlock's call for the node, or comes after that call gave
// up on it (its bound passed) and is followed in the background.
func TestUnlockRepeatsLateSetReleasesPastExtendTTL(t *testing.T) {
	const nodeTimeout = 100 * time.Millisecond
	for _, tc := range []struct {
		name    string
		overrun time.Duration
	}{
		{"failed within Unlock's call", 0},
		{"failed after Unlock's call gave up", nodeTimeout / 2},
	} {
		t.Run(tc.name, func(t *testing.T) { testLateSetReleasesPastExtendTTL(t, nodeTimeout, tc.overrun) })
	}
}

func testLateSetReleasesPastExtendTTL(t *testing.T, nodeTimeout, overrun time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		mem, _ := memNodes(5)
		x := pausedServer{Node: mem[4], paused: new(atomic.Bool), overrun: overrun}
		nodes := []driver.Node{mem[0], mem[1], mem[2], mem[3], x}
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(time.Second))
		x.pause(mem[4], true)
		start := time.Now()
		l, err := c.TryLock(t.Context(), "k") // granted by nodes 0-3; node 4's SET waits
		require.NoError(t, err)
		synctest.Wait()                                           // node 4 holds the SET: the PEXPIRE comes behind it
		require.NoError(t, l.Extend(t.Context(), 10*time.Second)) // its PEXPIRE to node 4 fails at the node timeout
		time.Sleep(nodeTimeout / 10)
		require.NoError(t, l.Unlock(t.Context())) // before node 4's SET fails
		synctest.Wait()
		require.Equal(t, 0, holders(mem[:4], "k"), "released on the nodes that answered")

		// Between two of the repeats (one per node timeout from the SET's
		// failure), none of which reached the node: the key is there now.
		time.Sleep(start.Add(15*time.Second + nodeTimeout/4).Sub(time.Now()))
		x.pause(mem[4], false) // the SET, then the PEXPIRE: 10s from now
		pttl, held := mem[4].PTTL("k")
		require.True(t, held && pttl > 5*time.Second, "the paused node applied the SET and the PEXPIRE it held: PTTL %v", pttl)
		time.Sleep(10 * nodeTimeout)
		synctest.Wait()
		assert.False(t, mem[4].Holds("k"), "key left on the node that answered %v after its resume, 5s before the repeats' end (the expiry plus the Extend's TTL)", 10*nodeTimeout)
	})
}

// The repeats of that release end by themselves, at the key's expiry plus
// the longest Extend TTL, when the node never answers: the node's cleaner
// still runs a second before, and no goroutine of the Client is left once
// they have ended, before Close.
func TestUnlockLateSetReleaseRepeatsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const nodeTimeout = 100 * time.Millisecond
		mem, _ := memNodes(5)
		x := pausedServer{Node: mem[4], paused: new(atomic.Bool)}
		nodes := []driver.Node{mem[0], mem[1], mem[2], mem[3], x}
		c := newClient(t, nodes, redlock.WithNodeTimeout(nodeTimeout), redlock.WithTTL(time.Second))
		x.pause(mem[4], true)
		start := time.Now()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait()
		require.NoError(t, l.Extend(t.Context(), 10*time.Second))
		time.Sleep(nodeTimeout / 10)
		require.NoError(t, l.Unlock(t.Context()))
		cleaners := func() int {
			buf := make([]byte, 1<<20)
			n := 0
			for _, st := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(st, "redlock.(*Client).clean") {
					n++
				}
			}
			return n
		}
		time.Sleep(start.Add(19 * time.Second).Sub(time.Now()))
		synctest.Wait()
		assert.Equal(t, 1, cleaners(), "the node's cleaner 1s before the expiry (10s) plus the Extend's TTL (10s)")
		time.Sleep(start.Add(20*time.Second + 2*nodeTimeout).Sub(time.Now()))
		synctest.Wait()
		assert.Zero(t, cleaners(), "the node's cleaner after the expiry plus the Extend's TTL")
		x.pause(mem[4], false) // what it held, for Close
	})
}
