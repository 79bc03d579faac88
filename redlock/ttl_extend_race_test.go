package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redlock"
)

// A Lock.TTL whose node reads came before a concurrent Extend's PEXPIREs
// read the time to live the Extend then replaced: it must not lower Until
// below what the Extend, which succeeded, set, and above all must not end
// the lock, which a quorum holds for the Extend's whole TTL. Here two nodes
// answer TTL with the old ~100ms left, an Extend to 1s succeeds (begun
// after TTL, or in flight when TTL began), and the third node answers 200ms
// later: the quorum-th largest answer (100ms from TTL's start) had passed
// when TTL judged, so TTL ended the held lock (Done closed, ErrLockLost)
// and cut Until by ~900ms.
func TestTTLConcurrentWithExtendKeepsTheLock(t *testing.T) {
	for _, extendFirst := range []bool{false, true} {
		name := "extend-begun-after-ttl"
		if extendFirst {
			name = "extend-in-flight-when-ttl-began"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				mem, _ := memNodes(3)
				ttlGate, extGate, open := make(chan struct{}), make(chan struct{}), make(chan struct{})
				close(open)
				if !extendFirst {
					close(extGate)
				}
				nodes := []driver.Node{
					ttlGatedNode{Node: mem[0], ttlGate: open, extGate: extGate},
					ttlGatedNode{Node: mem[1], ttlGate: open, extGate: extGate},
					ttlGatedNode{Node: mem[2], ttlGate: ttlGate, extGate: extGate},
				}
				c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				done := l.Done()
				time.Sleep(900 * time.Millisecond) // ~100ms of validity left

				extended := make(chan error, 1)
				extend := func() { extended <- l.Extend(ctx, time.Second) }
				type result struct {
					left time.Duration
					err  error
				}
				got := make(chan result, 1)
				if extendFirst {
					go extend()
					synctest.Wait() // the Extend waits for extGate
				}
				go func() {
					left, err := l.TTL(ctx)
					got <- result{left, err}
				}()
				synctest.Wait() // nodes 0 and 1 read ~100ms left; node 2 waits
				if extendFirst {
					close(extGate)
				} else {
					go extend()
				}
				require.NoError(t, <-extended)
				until := l.Until()
				time.Sleep(200 * time.Millisecond)
				close(ttlGate) // node 2 reads ~800ms left
				r := <-got
				require.NoError(t, r.err, "TTL concurrent with a successful Extend ended the lock")
				assert.Equal(t, until, l.Until(), "TTL moved the Until the Extend set")
				assert.Equal(t, until.Sub(time.Now()), r.left)
				select {
				case <-done:
					t.Fatal("Done closed: TTL ended a lock a quorum holds")
				default:
				}
				assert.Equal(t, 3, holders(mem, "k"))
				require.NoError(t, l.Unlock(ctx))
			})
		})
	}
}
