package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// splitConns is a memory node whose releases go on a connection of their
// own (rel), and every other call on another (the embedded Node), as a
// pooled client's calls do.
type splitConns struct {
	*memory.Node
	rel *memory.Node
}

func (n splitConns) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.rel.EvalRelease(ctx, key, value)
}

func (n splitConns) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	return n.rel.ReleaseNotify(ctx, key, value)
}

// The release repeats on a node whose release failed must outlast a
// PEXPIRE of the lock that waited in the node's socket and landed late,
// before the key expired there: it keeps the key a TTL from when it lands,
// later than the key's expiry as the Lock counts it (the Extend's start +
// TTL). Here node 2's Extend waits on a stalled connection (0.5s to 0.95s),
// its releases fail on another, cut, connection (0.6s to 1.41s), and the
// PEXPIRE lands at 0.95s: the key lives there until 1.95s. The repeats
// stopped at 1.5s, the Lock's expiry, before any was answered after the
// cut healed, leaving the key on node 2 until 1.95s. Unlock runs as the
// Extend's call to node 2 times out: that call has failed, or is still in
// flight, depending on which goroutine runs first.
func TestReleaseRepeatsOutlastALateExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem, _ := memNodes(3)
		rel := mem[2].Conn()
		ext := mem[2].Conn()
		nodes := []driver.Node{mem[0], mem[1], splitConns{ext, rel}}
		c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(100*time.Millisecond))
		t0 := time.Now()
		l, err := c.TryLock(ctx, "k")
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 3, holders(mem, "k"))

		time.Sleep(t0.Add(500 * time.Millisecond).Sub(time.Now()))
		ext.SetConnStalled(true) // node 2's PEXPIRE waits in the socket
		require.NoError(t, l.Extend(ctx, time.Second))

		time.Sleep(t0.Add(600 * time.Millisecond).Sub(time.Now()))
		rel.SetConnDown(true) // node 2's releases fail, unapplied
		require.NoError(t, l.Unlock(ctx))
		require.True(t, mem[2].Holds("k"))

		time.Sleep(t0.Add(950 * time.Millisecond).Sub(time.Now()))
		ext.SetConnStalled(false) // the PEXPIRE lands: the key lives until 1.95s
		left, ok := mem[2].PTTL("k")
		require.True(t, ok)
		require.Greater(t, left, 900*time.Millisecond)

		time.Sleep(t0.Add(1410 * time.Millisecond).Sub(time.Now()))
		rel.SetConnDown(false) // the releases can be answered again
		time.Sleep(t0.Add(1700 * time.Millisecond).Sub(time.Now()))
		synctest.Wait()
		require.False(t, mem[2].Holds("k"), "node 2 keeps the key after the release repeats stopped (PTTL %v)", func() time.Duration { d, _ := mem[2].PTTL("k"); return d }())
	})
}
