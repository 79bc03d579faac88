package redlock_test

import (
	"context"
	"fmt"
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

// ctxOwner is the context key of the lock a context belongs to: set by the
// caller of Do, and by keyedObserver's Extend.
type ctxOwner struct{ of string }

// ctxNode is a memory node that records, for each extension it is sent, the
// owners that its context names.
type ctxNode struct {
	*memory.Node
	mu   *sync.Mutex
	seen map[string][]string // key: "do=..., extend=..." of each call
}

func (n ctxNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	do, _ := ctx.Value(ctxOwner{"do"}).(string)
	ext, _ := ctx.Value(ctxOwner{"extend"}).(string)
	n.mu.Lock()
	n.seen[key] = append(n.seen[key], fmt.Sprintf("do=%s extend=%s", do, ext))
	n.mu.Unlock()
	return n.Node.Extend(ctx, key, value, ttl)
}

// queuingCtxNode is a ctxNode that queues (driver.Queuer), as every Redis
// driver's node does: the keeper sends its extensions another way.
type queuingCtxNode struct{ ctxNode }

func (queuingCtxNode) Pending() driver.Pending { return driver.Pending{} }

// keyedObserver's Extend names its key in the context it returns, as a
// tracing observer puts the Extend's span there.
type keyedObserver struct{ redlock.NopObserver }

func (keyedObserver) Extend(ctx context.Context, e redlock.ExtendStart) (context.Context, func(redlock.ExtendDone)) {
	return context.WithValue(ctx, ctxOwner{"extend"}, e.Key), nil
}

// Do's extensions reach the nodes with the context of their own lock: the
// values of its Do's context (a trace span of the caller's, which a driver's
// tracing hooks read), and with observers that of its Extend, as Observer
// says (an Extend's context goes down to the node calls within). Two Do's
// whose extensions are due together share a group of the Client's keeper,
// which sent every lock's extension with the first one's Do context: the
// second lock's commands showed in the first one's trace.
// It runs in a bubble (testing/synctest): its 600 ms TTL gives 60 ms node
// timeouts, which a loaded machine's real clock can pass; in the bubble the
// three Do's extensions also fall due at one instant, as a group.
func TestKeeperExtensionsCarryTheirOwnContext(t *testing.T) {
	for _, queuing := range []bool{false, true} {
		for _, observed := range []bool{false, true} {
			t.Run(fmt.Sprintf("queuing=%v,observed=%v", queuing, observed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var mu sync.Mutex
					seen := map[string][]string{}
					nodes := make([]driver.Node, 3)
					for i := range nodes {
						n := ctxNode{memory.New(), &mu, seen}
						if queuing {
							nodes[i] = queuingCtxNode{n}
						} else {
							nodes[i] = n
						}
					}
					var opts []redlock.Option
					if observed {
						opts = append(opts, redlock.WithObserver(keyedObserver{}))
					}
					c := newClient(t, nodes, append(opts, redlock.WithTTL(600*time.Millisecond), redlock.WithExtendInterval(100*time.Millisecond))...)
					var wg sync.WaitGroup
					for _, key := range []string{"a", "b", "c"} {
						wg.Go(func() {
							ctx := context.WithValue(t.Context(), ctxOwner{"do"}, key)
							assert.NoError(t, c.Do(ctx, key, func(context.Context) error {
								time.Sleep(350 * time.Millisecond) // three extensions or so
								return nil
							}))
						})
					}
					wg.Wait()
					mu.Lock()
					defer mu.Unlock()
					for _, key := range []string{"a", "b", "c"} {
						require.NotEmpty(t, seen[key], "extensions of %s", key)
						want := "do=" + key + " extend="
						if observed {
							want += key
						}
						for _, s := range seen[key] {
							assert.Equal(t, want, s, "the context of an extension of %s", key)
						}
					}
				})
			})
		}
	}
}
