package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// Regression tests for the defects an outside review found that are about what reaches
// Redis, against real redis-server processes through every Redis driver.

// Defect 4: Unlock with an ended context still sends the release to every
// node; it returns once a quorum confirmed, or after the node timeout with
// the context's error joined.
//
// Once (goredis, under -race at a load average of 15-40 on 2 cores, before
// the warm-up) the Unlock with 3 of 5 servers paused returned nil, which no
// reading of the code nor any reproduction since explained: the test logs
// every node call's reply it observed then (nodeReplies), so that a
// recurrence shows which node answered yes, and when.
func TestRedisUnlockWithEndedContext(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	const nodeTimeout = 300 * time.Millisecond
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			replies := newNodeReplies()
			c := openRedis(t, name, servers, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout),
				redlock.WithObserver(replies))
			// A fresh Client's first TryLock connects: under -race on
			// a loaded machine 3 of its 5 connections took longer than
			// the 300ms node timeout (goredis, 1 run of 20).
			warmUp(t, c, name)
			ended, cancel := context.WithCancel(t.Context())
			cancel() // the request is over: defer lock.Unlock(reqCtx)

			key := "ended-" + name
			l, err := c.TryLock(t.Context(), key)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ended), "a quorum confirmed the release")
			require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 0 }, 5*time.Second, 5*time.Millisecond,
				"Unlock with an ended context released the key on every node")

			l, err = c.TryLock(t.Context(), key)
			require.NoError(t, err)
			replies.mark("TryLock returned")
			for _, s := range servers[:3] {
				require.NoError(t, s.Pause())
				replies.mark("paused " + s.Addr())
			}
			start := time.Now()
			err = l.Unlock(ended)
			took := time.Since(start)
			replies.mark("Unlock returned")
			for _, s := range servers[:3] {
				require.NoError(t, s.Resume())
			}
			if !errors.Is(err, redlock.ErrLockLost) {
				replies.log(t)
			}
			require.ErrorIs(t, err, redlock.ErrLockLost, "no quorum confirmed")
			require.ErrorIs(t, err, context.Canceled, "the context's error is joined")
			assert.Less(t, took, nodeTimeout+3*time.Second, "Unlock returns after about the node timeout")
			require.Eventually(t, func() bool { return keysLeft(t, servers[3:], key) == 0 }, 5*time.Second, 5*time.Millisecond,
				"the answering nodes released the key")
		})
	}
}

// Defect 11: Unlock returns at a quorum, and Close then waits for the
// releases still in flight: no key is left on any node.
//
// Each Client is fresh: its first calls connect. The node timeout is one
// that those calls do not exhaust on a loaded machine under -race: with the
// default (200ms), a TryLock failed there for want of a quorum (3 of 5
// connections timed out), and a SET or release that times out has an
// unknown outcome, whose repeated releases Close ends by design (see
// Client.Close), so that the key may stay. Close still waits for at most
// the node timeout: a Close that did not wait for the releases in flight
// leaves keys whatever the timeout.
func TestRedisCloseWaitsForReleases(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			left := 0
			for i := range 20 {
				c, err := redlock.Open(name, redistest.Addrs(servers), redlock.WithNodeTimeout(2*time.Second))
				require.NoError(t, err)
				key := fmt.Sprintf("close-%s-%d", name, i)
				l, err := c.TryLock(t.Context(), key)
				require.NoError(t, err)
				require.NoError(t, l.Unlock(t.Context()))
				require.NoError(t, c.Close())
				if n := keysLeft(t, servers, key); n > 0 {
					t.Logf("try %d: the key is left on %d nodes after Unlock and Close", i, n)
					left++
				}
			}
			assert.Zero(t, left, "tries of 20 that left the key on a node after Unlock and Close")
		})
	}
}

// Defect 12: 3 of 5 nodes paused during an attempt, past the node timeout:
// their SETs are applied when they resume, after the releases the client sent
// meanwhile. The client repeats those releases until the nodes answer, so
// that shortly after they resume no key of the failed attempt remains.
func TestRedisNoPhantomAfterStall(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	const nodeTimeout = 100 * time.Millisecond
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c := openRedis(t, name, servers, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
			warmUp(t, c, name)
			for try := range 3 {
				key := fmt.Sprintf("phantom-%s-%d", name, try)
				for _, s := range servers[:3] {
					require.NoError(t, s.Pause())
				}
				_, err := c.TryLock(t.Context(), key)
				require.ErrorIs(t, err, redlock.ErrNotObtained)
				require.Eventually(t, func() bool {
					for _, s := range servers[:3] {
						if n, err := s.Unread(); err != nil || n == 0 {
							return false
						}
					}
					return true
				}, 10*time.Second, time.Millisecond, "the SETs are queued at the paused servers")
				time.Sleep(3 * nodeTimeout) // the releases sent meanwhile time out too
				for _, s := range servers[:3] {
					require.NoError(t, s.Resume())
				}
				resumed := time.Now()
				require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 0 }, 5*time.Second, 5*time.Millisecond,
					"try %d: a key of the failed attempt is left after the nodes resumed (TTL 1 minute)", try)
				t.Logf("try %d: no key left %v after the nodes resumed", try, time.Since(resumed).Round(time.Millisecond))
				time.Sleep(5 * nodeTimeout)
				require.Zero(t, keysLeft(t, servers, key), "try %d: a late SET came back after the key was gone", try)
			}
		})
	}
}

// warmUp connects c to every node before a test's calls that a node timeout
// bounds: three acquisitions and releases, each on a key of its own
// (warm-PREFIX-N), retried when a loaded machine's calls took longer than
// the node timeout. The warm-up must not fail the test: what follows does
// not depend on it; 50 failed tries do.
func warmUp(t *testing.T, c *redlock.Client, prefix string) {
	t.Helper()
	for i, warmed := 0, 0; warmed < 3; i++ {
		require.Less(t, i, 50, "the warm-up failed 50 times")
		l, err := c.TryLock(t.Context(), fmt.Sprintf("warm-%s-%d", prefix, i))
		if err != nil {
			t.Logf("warm-up %d: %v", i, err)
			continue
		}
		if err := l.Unlock(t.Context()); err != nil {
			t.Logf("warm-up %d: %v", i, err)
			continue
		}
		warmed++
	}
}

// nodeReplies records, in order, the node calls a Client reports (its
// observer) and the marks a test sets between them, for a test to log when
// an outcome needs explaining.
type nodeReplies struct {
	redlock.NopObserver
	start time.Time
	mu    sync.Mutex
	lines []string
}

func newNodeReplies() *nodeReplies { return &nodeReplies{start: time.Now()} }

// NodeCall records the call's reply.
func (o *nodeReplies) NodeCall(_ context.Context, e redlock.NodeCall) {
	o.add(fmt.Sprintf("%s %s on %s: ok=%v err=%v (%v)", e.Operation, e.Key, e.Node, e.OK, e.Err, e.Duration))
}

// mark records what the test did at this point.
func (o *nodeReplies) mark(what string) { o.add("-- " + what) }

func (o *nodeReplies) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, fmt.Sprintf("%10v %s", time.Since(o.start).Round(time.Microsecond), line))
}

// log logs what was recorded so far.
func (o *nodeReplies) log(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, line := range o.lines {
		t.Log(line)
	}
}
