package redlock_test

import (
	"context"
	"errors"
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

// unreachableRelease is a memory node that the holder cannot reach when it
// releases: the release fails, and nothing is published there.
type unreachableRelease struct{ *memory.Node }

var errUnreachable = errors.New("unreachable")

func (unreachableRelease) EvalRelease(context.Context, string, string) (bool, error) {
	return false, errUnreachable
}

func (unreachableRelease) ReleaseNotify(context.Context, string, string) (bool, error) {
	return false, errUnreachable
}

// landedNotices is a failFirstSubscribe node whose subscriptions pass on a
// release's notice only once the holder's releases have landed on every
// node that publishes them (landed is closed once ReleaseNotify, on any of
// the nodes that share it, has freed the key four times), or when the test
// ends. A notice wakes the waiter as soon as the node that published it has
// released; the other nodes' releases, sent at the same moment, can still
// be on their way, and the attempt it wakes be refused there (and its
// retries meet the keys it took itself, released in the background without
// a notice), which Lock's contract allows: a missed notice may cost a poll,
// here an hour. 2 runs of 6000 failed so (the 10s case: "did not hear the
// release"). Held until every release landed, a notice still has to reach
// the waiter through the subscriptions it made again, which is what the
// test is about; its first attempt then finds nodes 1-4 free.
type landedNotices struct {
	failFirstSubscribe
	released *atomic.Int32
	landed   chan struct{}
	end      <-chan struct{}
}

func (n landedNotices) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	ok, err := n.failFirstSubscribe.ReleaseNotify(ctx, key, value)
	if ok && err == nil && n.released.Add(1) == 4 {
		close(n.landed)
	}
	return ok, err
}

func (n landedNotices) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	heard := make(chan struct{}, 1)
	stop, err := n.failFirstSubscribe.Subscribe(ctx, key, heard)
	if err != nil {
		return nil, err
	}
	quit := make(chan struct{})
	// Ends when the subscription is cancelled, or with the test.
	go func() {
		for {
			select {
			case <-heard:
			case <-quit:
				return
			case <-n.end:
				return
			}
			select {
			case <-n.landed:
			case <-quit:
				return
			case <-n.end:
				return
			}
			select {
			case notify <- struct{}{}:
			default:
			}
		}
	}()
	var once sync.Once
	return func() {
		stop()
		once.Do(func() { close(quit) })
	}, nil
}

// A waiter whose first subscriptions failed on four of five nodes (slower
// than the node timeout, say) stands subscribed on one node only. A release
// that reaches a quorum is published on the nodes it reached, which need not
// include that one: here the holder's release fails on node 0, the waiter's
// only subscription, and frees nodes 1-4. The waiter must subscribe again to
// the nodes it missed, as long as it listens on fewer than a quorum's
// complement plus one (any quorum of released nodes then meets its
// subscriptions), and so hear the release, rather than wait for its next
// poll, an hour away; and when the release came before it subscribed again
// (here 400ms after the wait began, the first retry being 500ms to 1s
// after), it must
// try once it has, since it may have missed one.
func TestWaiterSubscribedOnAMinoritySubscribesAgain(t *testing.T) {
	for _, releaseAfter := range []time.Duration{10 * time.Second, 400 * time.Millisecond} {
		t.Run(releaseAfter.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := make([]driver.Node, 5)
				nodes[0] = unreachableRelease{memory.New()}
				released, landed := new(atomic.Int32), make(chan struct{})
				for i := 1; i < len(nodes); i++ {
					nodes[i] = landedNotices{failFirstSubscribe{memory.New(), new(atomic.Bool)}, released, landed, t.Context().Done()}
				}
				holder := newClient(t, nodes, redlock.WithTTL(time.Minute))
				l, err := holder.TryLock(t.Context(), "k")
				require.NoError(t, err)
				// TryLock returned once three nodes had answered: the
				// other SETs land before the waiter's first attempt, so
				// that the holder holds every node, as the release
				// below needs (else the waiter's SET could take a node
				// first, and the release, failed on node 0 and refused
				// there, end with ErrLockLost).
				synctest.Wait()
				c := newClient(t, nodes, redlock.WithBackoff(redlock.ConstantBackoff(time.Hour)))
				got := make(chan time.Time, 1)
				go func() {
					wl, err := c.Lock(t.Context(), "k")
					if err == nil {
						got <- time.Now()
						wl.Unlock(context.Background())
					}
				}()
				time.Sleep(releaseAfter)
				releasedThenHeld(t, l, got, "the waiter, subscribed on node 0 alone, did not hear the release published on nodes 1-4")
			})
		})
	}
}
