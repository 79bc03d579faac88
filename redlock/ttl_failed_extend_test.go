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

// A Lock.TTL whose node reads overlapped an Extend that then FAILED must still
// lower Until to what the reads guarantee: the failed Extend sets nothing, and
// nothing else will. Here the nodes' keys live 500ms less than the lock
// counts on (set from outside: a server's clock that jumped, or another
// client's PEXPIRE), TTL reads them while an Extend is in flight, and the
// Extend fails on every node without sending anything. Until must not be
// after the keys' expiry on the nodes, and Done must close once they expired.
func TestTTLConcurrentWithFailedExtendLowersUntil(t *testing.T) {
	for _, order := range []string{"extend-failed-before-ttl-judged", "extend-failed-after-ttl-returned", "extend-begun-after-ttl-failed-before-it-judged"} {
		t.Run(order, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				mem, _ := memNodes(3)
				ttlGate, extGate, open := make(chan struct{}), make(chan struct{}), make(chan struct{})
				close(open)
				var set setValue
				gate2 := open
				if order != "extend-failed-after-ttl-returned" {
					gate2 = ttlGate
				}
				nodes := []driver.Node{
					ttlGatedNode{Node: mem[0], ttlGate: open, extGate: extGate, failExtend: true, set: &set},
					ttlGatedNode{Node: mem[1], ttlGate: open, extGate: extGate, failExtend: true, set: &set},
					ttlGatedNode{Node: mem[2], ttlGate: gate2, extGate: extGate, failExtend: true, set: &set},
				}
				c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				done := l.Done()
				time.Sleep(100 * time.Millisecond)
				// The keys now live 500ms on every node, not the ~900ms left
				// the lock counts on.
				expiry := shortenKeys(t, mem, l.Key(), &set, 500*time.Millisecond)

				extended := make(chan error, 1)
				extend := func() { extended <- l.Extend(ctx, time.Second) }
				type result struct {
					left time.Duration
					err  error
				}
				got := make(chan result, 1)
				ttl := func() {
					left, err := l.TTL(ctx)
					got <- result{left, err}
				}
				var r result
				switch order {
				case "extend-failed-before-ttl-judged":
					go extend()
					synctest.Wait() // the Extend waits for extGate
					go ttl()
					synctest.Wait() // nodes 0 and 1 read 500ms left; node 2 waits
					close(extGate)
					require.Error(t, <-extended)
					close(ttlGate)
					r = <-got
				case "extend-failed-after-ttl-returned":
					go extend()
					synctest.Wait()
					ttl()
					r = <-got
					close(extGate)
					require.Error(t, <-extended)
				case "extend-begun-after-ttl-failed-before-it-judged":
					go ttl()
					synctest.Wait()
					go extend()
					synctest.Wait()
					close(extGate)
					require.Error(t, <-extended)
					close(ttlGate)
					r = <-got
				}
				require.NoError(t, r.err)
				assert.LessOrEqual(t, r.left, 500*time.Millisecond, "TTL said the lock is held longer than the nodes hold it")
				assert.False(t, l.Until().After(expiry), "Until %v is after the keys' expiry on the nodes (%v later)", l.Until(), l.Until().Sub(expiry))
				time.Sleep(time.Until(expiry) + time.Millisecond)
				assert.Equal(t, 0, holders(mem, l.Key()))
				select {
				case <-done:
				default:
					t.Fatal("Done still open after every node's key expired")
				}
			})
		})
	}
}
