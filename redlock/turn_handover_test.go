package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// behindSet is a memory node whose SETs, while a gate is set, wait until
// it closes before they reach the store, as a waiter's do when another
// Client's SETs get there first.
type behindSet struct {
	*memory.Node
	gate *atomic.Pointer[chan struct{}]
}

func (n behindSet) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if g := n.gate.Load(); g != nil {
		<-*g
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

// countedSubscribe is a behindSet node that counts the subscriptions made
// to it and those cancelled.
type countedSubscribe struct {
	behindSet
	subs, unsubs *atomic.Int32
}

func (n countedSubscribe) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	cancel, err := n.Node.Subscribe(ctx, key, notify)
	if err != nil {
		return nil, err
	}
	n.subs.Add(1)
	return func() { n.unsubs.Add(1); cancel() }, nil
}

// A waiter of a Client that gets the lock leaves its subscriptions to the
// key's releases to the next waiter of the Client, which takes the turn
// without subscribing again (a round trip, and a subscription and an
// unsubscription sent to each node, in each hand-off within a Client) and
// without an attempt at once, which the holder would refuse: every release
// since the grant was heard. It is woken by the holder's release.
func TestTurnHandsOverSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(5)
		var (
			subs, unsubs atomic.Int32
			gate         atomic.Pointer[chan struct{}]
		)
		counted := make([]driver.Node, len(mem))
		for i, m := range mem {
			counted[i] = countedSubscribe{behindSet{m, &gate}, &subs, &unsubs}
		}
		holder := newClient(t, nodes, redlock.WithTTL(time.Hour))
		log := &callAttempts{n: map[any]int{}}
		c := newClient(t, counted, redlock.WithTTL(time.Hour),
			redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)), redlock.WithObserver(log))
		held, err := holder.TryLock(t.Context(), "k")
		require.NoError(t, err)
		synctest.Wait() // its SETs answered after the quorum too
		require.Equal(t, len(mem), holders(mem, "k"), "the holder holds every node")

		got := make(chan *redlock.Lock, 2)
		lock := func(call string) {
			l, err := c.Lock(context.WithValue(t.Context(), callKey{}, call), "k")
			if err == nil {
				got <- l
			}
		}
		go lock("first") // takes the turn and subscribes
		synctest.Wait()
		go lock("second") // waits for the turn
		synctest.Wait()
		require.Equal(t, int32(len(mem)), subs.Load(), "the first waiter's subscriptions")

		// The first waiter's SETs come once the release is done on every
		// node, whose notices are then all in: it holds every node.
		behind := make(chan struct{})
		gate.Store(&behind)
		require.NoError(t, held.Unlock(t.Context()))
		synctest.Wait()
		gate.Store(nil)
		close(behind)
		first := <-got
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, int32(len(mem)), subs.Load(), "subscriptions once the second waiter has the turn")
		require.Equal(t, int32(0), unsubs.Load(), "subscriptions cancelled once the second waiter has the turn")
		require.Equal(t, 1, log.of("second"), "attempts of the second waiter while the first holds the lock: its first, before it waited for the turn")

		require.NoError(t, first.Unlock(t.Context()))
		second := <-got
		require.NoError(t, second.Unlock(t.Context()))
		synctest.Wait()
		require.Equal(t, int32(len(mem)), unsubs.Load(), "the subscriptions are cancelled once no waiter is left")
	})
}

// callKey keys the name of a Lock call in its context.
type callKey struct{}

// callAttempts is an Observer that counts the attempts of each Lock call, by
// the name in its context (callKey).
type callAttempts struct {
	redlock.NopObserver
	mu sync.Mutex
	n  map[any]int
}

func (o *callAttempts) Attempt(ctx context.Context, _ redlock.AttemptStart) (context.Context, func(redlock.AttemptDone)) {
	o.mu.Lock()
	o.n[ctx.Value(callKey{})]++
	o.mu.Unlock()
	return ctx, nil
}

func (o *callAttempts) of(call string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[call]
}
