package redlock_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// pttl reads key's PTTL on s.
func pttl(t *testing.T, s *redistest.Server, key string) time.Duration {
	t.Helper()
	v, err := s.Do(t.Context(), "PTTL", key)
	require.NoError(t, err)
	ms, ok := v.(int64)
	require.True(t, ok, "PTTL reply %v", v)
	return time.Duration(ms) * time.Millisecond
}

// A call's TTL is what the nodes hold the key for.
func TestRedisCallTTL(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := openRedis(t, name, servers) // TTL 10s
			key := "call-ttl-" + name
			l, err := c.TryLock(ctx, key, redlock.WithTTL(90*time.Second))
			require.NoError(t, err)
			// A quorum has the key; a third SET may have failed on a busy
			// machine (the node timeout is 200ms).
			require.GreaterOrEqual(t, keysLeft(t, servers, key), 2)
			for _, s := range servers {
				if d := pttl(t, s, key); d != -2*time.Millisecond {
					assert.Greater(t, d, 80*time.Second, "PTTL on %s after TryLock(WithTTL(90s))", s.Addr())
					assert.LessOrEqual(t, d, 90*time.Second)
				}
			}
			left, err := l.TTL(ctx)
			require.NoError(t, err)
			assert.Greater(t, left, 80*time.Second, "Lock.TTL")
			assert.LessOrEqual(t, left, 90*time.Second-902*time.Millisecond, "Lock.TTL discounts the drift")
			require.NoError(t, l.Unlock(ctx))
			// Unlock returns on a quorum: wait for the last release.
			require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 0 }, 5*time.Second, time.Millisecond)

			l, err = c.Lock(ctx, key, redlock.WithTTL(45*time.Second))
			require.NoError(t, err)
			require.GreaterOrEqual(t, keysLeft(t, servers, key), 2)
			for _, s := range servers {
				if d := pttl(t, s, key); d != -2*time.Millisecond {
					assert.Greater(t, d, 40*time.Second, "PTTL after Lock(WithTTL(45s))")
					assert.LessOrEqual(t, d, 45*time.Second)
				}
			}
			require.NoError(t, l.Unlock(ctx))
			require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 0 }, 5*time.Second, time.Millisecond)

			err = c.Do(ctx, key, func(context.Context) error {
				for _, s := range servers {
					if d := pttl(t, s, key); d > 0 && (d <= 25*time.Second || d > 30*time.Second) {
						return errors.New("PTTL " + d.String() + " inside Do(WithTTL(30s))")
					}
				}
				return nil
			}, redlock.WithTTL(30*time.Second))
			require.NoError(t, err)
		})
	}
}

// Unavailable when a majority is down, not when the key is merely held.
func TestRedisUnavailable(t *testing.T) {
	servers := redistest.NewServers(t, 5)
	clients := make(map[string]*redlock.Client)
	held := make(map[string]*redlock.Lock)
	for _, name := range redisDrivers {
		// A node timeout long enough that a loaded machine does not fail
		// the live nodes' calls: a held key must read as busy, not as
		// unavailable. The killed nodes below refuse at once.
		c := openRedis(t, name, servers, redlock.WithBackoff(redlock.ConstantBackoff(20*time.Millisecond)),
			redlock.WithNodeTimeout(time.Second))
		clients[name] = c
		key := "unavailable-" + name
		// Held for a minute: the subtests below take up to 3s each, and
		// its TTL and Extend must find it lost for want of nodes, not over.
		l, err := c.TryLock(t.Context(), key, redlock.WithTTL(time.Minute))
		require.NoError(t, err)
		held[name] = l
		// Every node holds it, so that the live ones grant it below.
		require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 5 }, 5*time.Second, time.Millisecond)
		_, err = c.TryLock(t.Context(), key)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "%s: a held key is busy, not unavailable", name)
		var v *redlock.VoteError
		require.ErrorAs(t, err, &v)
		assert.Zero(t, v.Failed, name)
		// Ended by a cancellation, not a deadline: a driver bounds its
		// reads by a socket deadline equal to the context's, which can
		// fail a call before the context reports its end, and such a call
		// counted as a node's failure (1 run in 4 under load: too many
		// nodes unavailable). A canceled context reports it first.
		ctx, cancel := context.WithCancel(t.Context())
		stop := time.AfterFunc(300*time.Millisecond, cancel)
		_, err = c.Lock(ctx, key)
		stop.Stop()
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, redlock.ErrUnavailable, "%s: Lock of a held key", name)
	}
	for _, s := range servers[:3] {
		require.NoError(t, s.Kill())
	}
	// The subtests run in parallel (go test's -parallel at a time): each
	// has its Client and keys, and spends most of its 3s waiting in Lock
	// (12s one after the other); the servers, three dead, two live, are
	// only read.
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := clients[name]
			_, err := c.TryLock(t.Context(), "free-"+name)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
			var v *redlock.VoteError
			require.ErrorAs(t, err, &v)
			assert.GreaterOrEqual(t, v.Failed, 3)
			assert.Equal(t, 3, v.Needed)

			// Longer than the node timeout: an attempt whose calls end
			// (refused, or at the node timeout where a loaded machine's
			// dials to the killed nodes hang) gives the verdict, not
			// only the last one, cut short by ctx.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			_, err = c.Lock(ctx, "free-"+name)
			cancel()
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			require.ErrorIs(t, err, redlock.ErrUnavailable, "Lock with a majority down")

			l := held[name]
			_, err = l.TTL(t.Context())
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
			err = l.Extend(t.Context(), time.Minute)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorIs(t, err, redlock.ErrUnavailable)
		})
	}
}

// Lock.TTL through every driver: a quorum's remaining TTL, and ErrLockLost
// when fewer than a quorum hold the lock.
func TestRedisLockTTL(t *testing.T) {
	servers := redistest.NewServers(t, 3)
	for _, name := range redisDrivers {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			c := openRedis(t, name, servers, redlock.WithTTL(20*time.Second))
			key := "lock-ttl-" + name
			l, err := c.TryLock(ctx, key)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return keysLeft(t, servers, key) == 3 }, 5*time.Second, time.Millisecond)
			// One node says 5s: the quorum (2) still guarantees about 20s.
			_, err = servers[0].Do(ctx, "PEXPIRE", key, "5000")
			require.NoError(t, err)
			left, err := l.TTL(ctx)
			require.NoError(t, err)
			assert.Greater(t, left, 15*time.Second, "the quorum-th largest of 20s, 20s, 5s")
			// Two nodes say 5s: the quorum guarantees 5s less drift, and Until
			// comes down to it.
			_, err = servers[1].Do(ctx, "PEXPIRE", key, "5000")
			require.NoError(t, err)
			left, err = l.TTL(ctx)
			require.NoError(t, err)
			assert.LessOrEqual(t, left, 5*time.Second-202*time.Millisecond)
			assert.Greater(t, left, 3*time.Second)
			assert.WithinDuration(t, time.Now().Add(left), l.Until(), time.Second, "Until follows the quorum")

			for _, s := range servers[:2] {
				_, err = s.Do(ctx, "DEL", key)
				require.NoError(t, err)
			}
			_, err = l.TTL(ctx)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.NotErrorIs(t, err, redlock.ErrUnavailable, "the nodes answered")
			select {
			case <-l.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done did not close when TTL found the lock lost")
			}
		})
	}
}

// Errors that retrying cannot fix end Lock and Do at once, through every
// driver, against servers that answer them: a wrong password, no password,
// an ACL user without permission, a key of the wrong type, out of memory, and
// read-only replicas.
func TestRedisPermanentErrorsFailFast(t *testing.T) {
	const password = "right-Pa55word"
	type setup struct {
		name, code string
		addrs      func(servers []*redistest.Server) []string
		prepare    func(t *testing.T, servers []*redistest.Server, key string)
		opts       []redlock.Option
		srvOpts    []redistest.Option
	}
	withPass := func(user, pass string) func([]*redistest.Server) []string {
		return func(servers []*redistest.Server) []string {
			addrs := make([]string, len(servers))
			for i, s := range servers {
				u := url.URL{Scheme: "redis", Host: s.Addr()}
				if pass != "" {
					u.User = url.UserPassword(user, pass)
				}
				addrs[i] = u.String()
			}
			return addrs
		}
	}
	for _, tc := range []setup{
		{name: "wrong password", code: "WRONGPASS", addrs: withPass("", "wrong"), srvOpts: []redistest.Option{redistest.WithPassword(password)}},
		{name: "no password", code: "NOAUTH", addrs: withPass("", ""), srvOpts: []redistest.Option{redistest.WithPassword(password)}},
		{name: "ACL permission", code: "NOPERM", addrs: withPass("limited", password), prepare: func(t *testing.T, servers []*redistest.Server, _ string) {
			for _, s := range servers {
				_, err := s.Do(t.Context(), "ACL", "SETUSER", "limited", "reset", "on", ">"+password, "~other:*", "+@all")
				require.NoError(t, err)
			}
		}},
		{name: "wrong type", code: "WRONGTYPE", opts: []redlock.Option{redlock.WithFencing()}, prepare: func(t *testing.T, servers []*redistest.Server, key string) {
			for _, s := range servers[:2] { // the fencing counter is a list (an old counter that is not a number would count as none)
				_, err := s.Do(t.Context(), "RPUSH", driver.FenceKey(key), "x")
				require.NoError(t, err)
			}
		}},
		{name: "out of memory", code: "OOM", prepare: func(t *testing.T, servers []*redistest.Server, _ string) {
			for _, s := range servers[:2] {
				_, err := s.Do(t.Context(), "CONFIG", "SET", "maxmemory", "1")
				require.NoError(t, err)
			}
		}},
		{name: "read-only replica", code: "READONLY", prepare: func(t *testing.T, servers []*redistest.Server, _ string) {
			primary := redistest.NewServer(t)
			host, port, _ := strings.Cut(primary.Addr(), ":")
			for _, s := range servers[:2] {
				_, err := s.Do(t.Context(), "REPLICAOF", host, port)
				require.NoError(t, err)
			}
		}},
	} {
		t.Run(tc.code, func(t *testing.T) {
			servers := redistest.NewServers(t, 3, tc.srvOpts...)
			if tc.prepare != nil {
				for _, name := range redisDrivers {
					tc.prepare(t, servers, "perm-"+name)
				}
			}
			addrs := redistest.Addrs(servers)
			if tc.addrs != nil {
				addrs = tc.addrs(servers)
			}
			for _, name := range redisDrivers {
				t.Run(name, func(t *testing.T) {
					opts := append([]redlock.Option{redlock.WithBackoff(redlock.ConstantBackoff(10 * time.Millisecond))}, tc.opts...)
					c, err := redlock.Open(name, addrs, opts...)
					require.NoError(t, err)
					defer c.Close()
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					key := "perm-" + name
					start := time.Now()
					_, err = c.Lock(ctx, key)
					took := time.Since(start)
					require.Error(t, err)
					require.NoError(t, ctx.Err(), "Lock waited for its context: %v", err)
					assert.Less(t, took, 20*time.Second, "Lock must not wait for a permanent failure")
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					require.ErrorIs(t, err, redlock.ErrUnavailable)
					assert.ErrorContains(t, err, tc.code+", which retrying cannot fix", "%s: the error names the cause", tc.name)
					var v *redlock.VoteError
					require.ErrorAs(t, err, &v)
					assert.GreaterOrEqual(t, v.Permanent, 2)

					err = c.Do(ctx, key, func(context.Context) error { return errors.New("must not run") })
					require.NoError(t, ctx.Err(), "Do waited for its context: %v", err)
					require.ErrorIs(t, err, redlock.ErrNotObtained)
					assert.ErrorContains(t, err, tc.code)
				})
			}
		})
	}
}
