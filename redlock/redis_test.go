package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// The algorithm against real redis-server processes, through every Redis driver.

var redisDrivers = []string{"goredis", "redigo", "rueidis", "valkeygo"}

// liveNodeTimeout is the node timeout of the tests that need every live
// node's call to count: they assert votes, outcomes or wake-ups, not how
// long a call takes. A live node's answer is bounded by nothing but the
// node timeout, and a loaded machine (load 20-48 on 2 cores) took longer
// than the default 200ms for a fresh client's first call (its dial and its
// SET: "SET NX: context deadline exceeded", "connect: still connecting"),
// which then failed as if the node were down. Half the default TTL: the
// nodes these tests stop are killed, and refuse at once, so the bound
// costs them no time.
const liveNodeTimeout = redlock.DefaultTTL / 2

func openRedis(t *testing.T, name string, servers []*redistest.Server, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.Open(name, redistest.Addrs(servers), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// keysLeft counts the servers on which key exists.
func keysLeft(t *testing.T, servers []*redistest.Server, key string) int {
	t.Helper()
	n := 0
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		v, err := s.Do(ctx, "EXISTS", key)
		cancel()
		if err == nil && v == int64(1) {
			n++
		}
	}
	return n
}

func TestRedisMinorityKilled(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[3].Kill())
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			// A node timeout that a loaded machine does not exhaust on the
			// live nodes (with the default 200ms, an Extend lost the lock
			// in 1 run of 5 under load, a live node's call timed out): a
			// live node must count, whatever the machine does.
			c := openRedis(t, name, servers, redlock.WithNodeTimeout(time.Second))
			l, err := c.TryLock(t.Context(), "k-"+name)
			require.NoError(t, err, "3 live nodes of 5 are a quorum")
			require.NoError(t, l.Extend(t.Context(), time.Minute))
			require.NoError(t, l.Unlock(t.Context()))
		})
	}
}

func TestRedisMajorityKilled(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	for _, s := range servers[:3] {
		require.NoError(t, s.Kill())
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c := openRedis(t, name, servers)
			start := time.Now()
			_, err := c.TryLock(t.Context(), "k-"+name)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			var ne *redlock.NodeError
			require.ErrorAs(t, err, &ne, "the dead nodes' errors are in the chain")
			assert.Less(t, time.Since(start), 5*time.Second)
			require.Eventually(t, func() bool { return keysLeft(t, servers[3:], "k-"+name) == 0 }, 5*time.Second, 5*time.Millisecond,
				"the keys set on the live minority must be released")
		})
	}
}

func TestRedisStalledMinority(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	const nodeTimeout = 4 * time.Second
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c := openRedis(t, name, servers, redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(nodeTimeout))
			l, err := c.TryLock(t.Context(), "warm-"+name) // connect to every node first
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))

			require.NoError(t, servers[1].Pause())
			require.NoError(t, servers[4].Pause())
			defer servers[1].Resume()
			defer servers[4].Resume()
			start := time.Now()
			l, err = c.TryLock(t.Context(), "k-"+name)
			require.NoError(t, err)
			require.NoError(t, l.Unlock(t.Context()))
			// Waiting for a stalled node would take the node timeout.
			assert.Less(t, time.Since(start), nodeTimeout/2, "TryLock and Unlock must not wait for a stalled minority")
		})
	}
}

func TestRedisStalledMajority(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	for _, s := range servers[:3] {
		require.NoError(t, s.Pause())
		defer s.Resume()
	}
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			c := openRedis(t, name, servers, redlock.WithNodeTimeout(200*time.Millisecond))
			start := time.Now()
			_, err := c.TryLock(t.Context(), "k-"+name)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, time.Since(start), 3*time.Second, "refused within about the node timeout")
		})
	}
}

// lostReply applies every command on a real node and then reports a failure,
// as when the reply is lost on the way back.
type lostReply struct{ driver.Node }

var errLost = errors.New("reply lost")

func (n lostReply) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.Node.SetNX(ctx, key, value, ttl)
	return false, errLost
}

func TestRedisReleaseAfterLostReplies(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			d := driverByName(t, name)
			nodes := make([]driver.Node, len(servers))
			for i, s := range servers {
				n, err := d.Open(s.Addr())
				require.NoError(t, err)
				nodes[i] = n
				if i < 3 {
					nodes[i] = lostReply{n}
				}
			}
			c := newClient(t, nodes, redlock.WithNodeTimeout(liveNodeTimeout))
			key := "k-" + name
			_, err := c.TryLock(t.Context(), key)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, errLost)
			require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 0 }, 5*time.Second, 5*time.Millisecond,
				"the SETs applied with lost replies must be released too")
			other := openRedis(t, name, servers, redlock.WithNodeTimeout(liveNodeTimeout))
			l, err := other.TryLock(t.Context(), key)
			require.NoError(t, err, "another client locks at once instead of waiting for the TTL")
			require.NoError(t, l.Unlock(t.Context()))
		})
	}
}

func driverByName(t testing.TB, name string) driver.Driver {
	t.Helper()
	d, ok := map[string]driver.Driver{"goredis": goredis.Driver{}, "redigo": redigo.Driver{}, "rueidis": rueidis.Driver{}, "valkeygo": valkeygo.Driver{}}[name]
	require.True(t, ok, name)
	return d
}

func TestRedisContentionAllDrivers(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	const perContender = 20
	var (
		inside, grants atomic.Int32
		wg             sync.WaitGroup
	)
	for _, name := range redisDrivers {
		c := openRedis(t, name, servers, redlock.WithBackoff(redlock.ExponentialBackoff(time.Millisecond, 10*time.Millisecond)))
		for range 3 {
			wg.Go(func() {
				for range perContender {
					l, err := c.Lock(t.Context(), "contended")
					if !assert.NoError(t, err, name) {
						return
					}
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					grants.Add(1)
					time.Sleep(100 * time.Microsecond)
					inside.Add(-1)
					assert.NoError(t, l.Unlock(t.Context()), name)
				}
			})
		}
	}
	wg.Wait()
	assert.EqualValues(t, len(redisDrivers)*3*perContender, grants.Load())
}

func TestRedisInteroperation(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	clients := make(map[string]*redlock.Client)
	for _, name := range redisDrivers {
		clients[name] = openRedis(t, name, servers)
	}
	for _, holder := range redisDrivers {
		// Lock, not TryLock: the previous holder's Unlock returned at a
		// quorum, and its other releases (and those of the refused
		// attempts below) may still be on their way.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		l, err := clients[holder].Lock(ctx, "shared")
		cancel()
		require.NoError(t, err)
		for _, other := range redisDrivers {
			_, err := clients[other].TryLock(t.Context(), "shared")
			require.ErrorIs(t, err, redlock.ErrNotObtained, "a lock taken through %s must block %s", holder, other)
		}
		require.NoError(t, l.Unlock(t.Context()))
	}
}

func TestRedisFencingTokensRiseAcrossDrivers(t *testing.T) {
	ctx := t.Context()
	servers := redistest.NewServers(t, 5)
	clients := make([]*redlock.Client, len(redisDrivers))
	for i, name := range redisDrivers {
		clients[i] = openRedis(t, name, servers, redlock.WithFencing(), redlock.WithTTL(time.Second))
	}
	var last uint64
	grant := func(c *redlock.Client, why string) *redlock.Lock {
		t.Helper()
		l, err := c.Lock(ctx, "fenced")
		require.NoError(t, err, why)
		require.Greater(t, l.Token(), last, "%s: tokens must rise with every grant", why)
		last = l.Token()
		return l
	}
	for round := range 2 {
		for i, name := range redisDrivers {
			l := grant(clients[i], fmt.Sprintf("round %d through %s", round, name))
			require.NoError(t, l.Unlock(ctx))
		}
	}
	// A holder that never unlocks: its lock expires and the next grant still
	// gets a higher token.
	grant(clients[0], "before expiry")
	grant(clients[1], "after the first holder's lock expired")

	// Shifting quorums: a different minority is stalled for each grant.
	for i, stalled := range [][]int{{0, 1}, {2, 3}, {4, 0}} {
		for _, s := range stalled {
			require.NoError(t, servers[s].Pause())
		}
		l := grant(clients[i%len(clients)], fmt.Sprintf("servers %v stalled", stalled))
		require.NoError(t, l.Unlock(ctx))
		for _, s := range stalled {
			require.NoError(t, servers[s].Resume())
		}
	}
}

// Hand-off: a waiter takes a released lock on the release, not on its next
// poll. The latency is measured by the benchmarks; here the waiter's polling
// interval is a minute, so only the release notification can wake it.
func TestRedisHandOff(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			holder := openRedis(t, name, servers)
			waiter := openRedis(t, name, servers, redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)))
			key := "handoff-" + name
			l, err := holder.TryLock(t.Context(), key)
			require.NoError(t, err)
			got := make(chan time.Time, 1)
			go func() {
				w, err := waiter.Lock(t.Context(), key)
				if assert.NoError(t, err) {
					at := time.Now()
					assert.NoError(t, w.Unlock(t.Context()))
					got <- at
				}
			}()
			time.Sleep(200 * time.Millisecond) // the waiter fails once and subscribes
			released := time.Now()
			require.NoError(t, l.Unlock(t.Context()))
			select {
			case at := <-got:
				t.Logf("%s: hand-off %v after the release", name, at.Sub(released))
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter was not woken by the release")
			}
		})
	}
}
