package redlock_test

import (
	"context"
	"errors"
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

// failingExtendNode is a memory node that notes the value its SET wrote, whose
// TTL reads wait for ttlGate, and whose Extend waits for extGate and then
// fails without sending anything (a connection reset).
type failingExtendNode struct {
	*memory.Node
	ttlGate, extGate <-chan struct{}
	mu               *sync.Mutex
	value            *string
}

func (n failingExtendNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	*n.value = value
	n.mu.Unlock()
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n failingExtendNode) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	<-n.ttlGate
	return n.Node.TTL(ctx, key, value)
}

func (n failingExtendNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	<-n.extGate
	return false, errors.New("connection reset by peer")
}

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
				var mu sync.Mutex
				var value string
				gate2 := open
				if order != "extend-failed-after-ttl-returned" {
					gate2 = ttlGate
				}
				nodes := []driver.Node{
					failingExtendNode{mem[0], open, extGate, &mu, &value},
					failingExtendNode{mem[1], open, extGate, &mu, &value},
					failingExtendNode{mem[2], gate2, extGate, &mu, &value},
				}
				c := newClient(t, nodes, redlock.WithTTL(time.Second), redlock.WithNodeTimeout(500*time.Millisecond))
				l, err := c.TryLock(ctx, "k")
				require.NoError(t, err)
				done := l.Done()
				time.Sleep(100 * time.Millisecond)
				// The keys now live 500ms on every node, not the ~900ms left
				// the lock counts on.
				mu.Lock()
				v := value
				mu.Unlock()
				expiry := time.Now().Add(500 * time.Millisecond)
				for _, m := range mem {
					ok, err := m.Extend(ctx, l.Key(), v, 500*time.Millisecond)
					require.NoError(t, err)
					require.True(t, ok)
				}

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
