package safety_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	_ "github.com/go-redlock/redlock/drivers/goredis"  // registers "goredis"
	_ "github.com/go-redlock/redlock/drivers/redigo"   // registers "redigo"
	_ "github.com/go-redlock/redlock/drivers/rueidis"  // registers "rueidis"
	_ "github.com/go-redlock/redlock/drivers/valkeygo" // registers "valkeygo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
	"github.com/go-redlock/redlock/safety/chaos"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// redisDrivers are the drivers every scenario runs through.
var redisDrivers = []string{"goredis", "redigo", "rueidis", "valkeygo"}

// nodes are independent redis-server processes, each behind its own proxy.
// Clients connect to the proxies; tests inspect the servers directly.
type nodes struct {
	servers []*redistest.Server
	proxies []*faultproxy.Proxy
}

// startNodes starts n servers with opts and a proxy in front of each.
func startNodes(t *testing.T, n int, opts ...redistest.Option) *nodes {
	t.Helper()
	servers := redistest.NewServers(t, n, opts...)
	return &nodes{servers: servers, proxies: faultproxy.NewProxies(t, servers)}
}

// addrs are the proxies' addresses, which clients open.
func (ns *nodes) addrs() []string { return redistest.Addrs(ns.proxies) }

// open opens a client through driver on addrs and closes it when the test
// ends.
func open(t *testing.T, driver string, addrs []string, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.Open(driver, addrs, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// warm takes and releases a lock on another key, so that the client has
// connected to every node before a fault. It retries: a first connection
// can take longer than a short node timeout on a busy machine, and so can
// the first release (a server's first EVALSHA of the script answers
// NOSCRIPT, and the EVAL that follows is a second round trip). A release
// that failed is tried again on a key of its own, since the failed one's key
// may stay on some nodes for its TTL. Every try of every call has a key of
// its own (warmUps): the keys were once "warm-up/0", "warm-up/1"... in each
// call, so that the next call (warmAll's, or another client's over the same
// nodes) was refused a key a failed release had left, for its TTL (30s in
// the notice tests), and gave up after 10s ("3 refused"). Its Lock retries
// every 50ms (warmBackoff), whatever the client's Backoff: an attempt
// slower than the node timeout leaves its late SETs on some nodes until the
// client's repeated releases remove them, and a client that polls every 20s
// (the notice tests' B), woken by none of those releases, was refused by its
// own late keys until the 10s ran out ("3 refused" on a key of its own).
// It has 30s, not 10s: it ends as soon as a lock is taken and released, and
// at a load average of 20 to 40 on two cores, under -race, a valkeygo
// client's first connections were still being made 10s after its first
// call (TestFencedSoakTokensRise, 1 run of 2: "SET NX fence: connect:
// still connecting" from 3 of 5 nodes), failing the test before its soak.
func warm(t *testing.T, c *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		l, err := c.Lock(ctx, "warm-up/"+strconv.FormatInt(warmUps.Add(1), 10), redlock.WithBackoff(warmBackoff))
		require.NoError(t, err)
		err = l.Unlock(ctx)
		if err == nil {
			return
		}
		require.NoError(t, ctx.Err(), "the warm-up's releases kept failing, the last with: %v", err)
		t.Logf("warm-up, release %d: %v", try, err)
	}
}

// unlockSlow unlocks l, a lock a test took to set the scene or was granted
// after it. An Unlock that found no quorum because releases were slower than
// the node timeout on a loaded machine (the scene's set-up or its end, not
// what the tests check; the node timeouts are short, 200-500ms) is logged;
// one with more refusals than nodes outside a quorum (the lock was not held
// by a quorum) fails the test. Refusals come from the nodes a grant did not
// reach (node 0 in TestWaiterSubscribedOnAMinority still has A's key).
func unlockSlow(t *testing.T, l *redlock.Lock) {
	t.Helper()
	err := l.Unlock(t.Context())
	if slowRelease(err) {
		t.Logf("Unlock, slower than the node timeout: %v", err)
		return
	}
	require.NoError(t, err)
}

// slowRelease reports whether err, an Unlock's, says that nodes failed (a
// loaded machine's releases slower than the node timeout) with no more
// refusals than nodes outside a quorum: a quorum could have confirmed the
// release had they answered in time. See unlockSlow.
func slowRelease(err error) bool {
	var ve *redlock.VoteError
	return err != nil && errors.As(err, &ve) && ve.Failed > 0 && ve.Refused <= ve.Nodes-ve.Needed
}

// warmUps numbers the warm-up keys (see warm).
var warmUps atomic.Int64

// warmBackoff is the delay between the attempts of warm's Lock.
var warmBackoff = redlock.ConstantBackoff(50 * time.Millisecond)

// warmAll is warm until the release has reached every server, not only a
// quorum: the client then holds a working connection to each, and a request
// sent right after goes out at once, without a new connection's handshake.
func (ns *nodes) warmAll(t *testing.T, c *redlock.Client) {
	t.Helper()
	scripts := func(i int) int {
		return commandCalls(t, ns.servers[i], "evalsha") + commandCalls(t, ns.servers[i], "eval")
	}
	before := make([]int, len(ns.servers))
	for i := range ns.servers {
		before[i] = scripts(i)
	}
	reached := func() bool {
		for i := range ns.servers {
			if scripts(i) == before[i] {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		warm(t, c)
		for range 100 { // the releases beyond the quorum finish in the background
			if reached() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		require.True(t, time.Now().Before(deadline), "the client did not reach every server")
	}
}

// holders returns the indexes of the servers on which key exists, asking
// each directly (not through its proxy).
func (ns *nodes) holders(t *testing.T, key string) []int {
	t.Helper()
	var out []int
	for i, s := range ns.servers {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		v, err := s.Do(ctx, "EXISTS", key)
		cancel()
		if err == nil && v == int64(1) {
			out = append(out, i)
		}
	}
	return out
}

// leftKeys tells, for each server in h (indexes from holders), what is
// left of key there: its remaining time to live (PTTL, asked first; -1 is a
// key without one) and its idle time (OBJECT IDLETIME, in whole seconds
// since a command other than EXISTS, PTTL or OBJECT last read or wrote it),
// so that a key found after everyone released it says whether something
// wrote it recently (idle 0s, a PTTL within the TTL) or it outlived its
// expiry unwritten. since is when everyone had released it.
func (ns *nodes) leftKeys(t *testing.T, key string, h []int, since time.Time) string {
	t.Helper()
	var parts []string
	for _, i := range h {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		left, err := ns.servers[i].Do(ctx, "PTTL", key)
		idle, ierr := ns.servers[i].Do(ctx, "OBJECT", "IDLETIME", key)
		cancel()
		parts = append(parts, fmt.Sprintf("server %d: PTTL %v (%v), idle %vs (%v)", i, left, err, idle, ierr))
	}
	return fmt.Sprintf("%s, %v after the release", strings.Join(parts, "; "), time.Since(since).Round(time.Millisecond))
}

// pttl returns the key's remaining time to live on s as the server reports
// it, and the local time at which the question was sent: the key expires no
// earlier than asked+pttl.
func pttl(t *testing.T, s *redistest.Server, key string) (asked time.Time, left time.Duration, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	asked = time.Now()
	v, err := s.Do(ctx, "PTTL", key)
	require.NoError(t, err)
	ms := v.(int64)
	if ms < 0 {
		return asked, 0, false
	}
	return asked, time.Duration(ms) * time.Millisecond, true
}

// expireTime returns when key expires on s (PEXPIRETIME: the server's own
// expiry time, by its wall clock, to the millisecond), and false if s has no
// such key or it has no expiry. On loopback the server's clock is the test's.
// Unlike a PTTL read with the time the test asked, it does not depend on how
// long the question took to reach the server: on a loaded machine that took
// longer than the 52ms drift allowance, and the key then seemed to expire
// before the lock's Until.
func expireTime(t *testing.T, s *redistest.Server, key string) (time.Time, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	v, err := s.Do(ctx, "PEXPIRETIME", key)
	require.NoError(t, err)
	ms := v.(int64)
	if ms < 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// commandCalls returns how many times s has run cmd ("set", "evalsha"), from
// INFO commandstats.
func commandCalls(t *testing.T, s *redistest.Server, cmd string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	v, err := s.Do(ctx, "INFO", "commandstats")
	require.NoError(t, err)
	prefix := "cmdstat_" + cmd + ":calls="
	for line := range strings.Lines(v.(string)) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

// forEach runs f on each index in parallel and waits.
func forEach[T any](items []T, f func(T) error) error {
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() { errs[i] = f(it) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// grant is the interval in which a Lock's holder may act: from when it got
// the lock to Until.
func grant(holder string, start time.Time, l *redlock.Lock) chaos.Grant {
	return chaos.Grant{Holder: holder, Start: start, End: l.Until()}
}

// measured logs a figure that SAFETY.md reports, in a form easy to find.
func measured(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("measured: "+format, args...)
}
