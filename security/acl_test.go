package security_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
	redlockrueidis "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/internal/keystatus"
	"github.com/go-redlock/redlock/internal/redisaddr"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

const (
	aclUser     = "locker"
	aclPassword = "acl-Pa55word-never-shown"
	adminPass   = "admin-Pa55word-never-shown" // the default user's: no unauthenticated access
	aclPrefix   = "lock:"
)

// readmeRule returns the arguments after "ACL SETUSER locker" of the
// least-privilege rule in the README, with PASSWORD replaced by aclPassword.
func readmeRule(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	const head = "ACL SETUSER " + aclUser + " "
	for line := range strings.Lines(string(readme)) {
		if rest, ok := strings.CutPrefix(line, head); ok {
			rule := strings.Fields(strings.ReplaceAll(rest, "PASSWORD", aclPassword))
			require.Contains(t, rule, ">"+aclPassword, "the README's rule sets no password")
			return rule
		}
	}
	t.Fatalf("README.md has no line starting with %q", head)
	return nil
}

// aclServers starts n servers with the default user behind adminPass and the
// user aclUser created with rule.
func aclServers(t *testing.T, n int, rule []string) []*redistest.Server {
	t.Helper()
	servers := redistest.NewServers(t, n, redistest.WithPassword(adminPass))
	for _, s := range servers {
		_, err := s.Do(t.Context(), append([]string{"ACL", "SETUSER", aclUser}, rule...)...)
		require.NoError(t, err, "ACL SETUSER %s %s", aclUser, strings.Join(rule, " "))
	}
	return servers
}

// aclAddrs returns the servers' addresses as the ACL user, in database 2 so
// that the clients send SELECT too.
func aclAddrs(servers []*redistest.Server) []string {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = "redis://" + aclUser + ":" + aclPassword + "@" + s.Addr() + "/2"
	}
	return addrs
}

// aclLog returns the server's ACL LOG entries, each as "reason object".
func aclLog(t *testing.T, s *redistest.Server) []string {
	t.Helper()
	v, err := s.Do(t.Context(), "ACL", "LOG")
	require.NoError(t, err)
	var entries []string
	for _, e := range v.([]any) {
		fields, _ := e.([]any)
		m := make(map[string]any)
		for i := 0; i+1 < len(fields); i += 2 {
			m[fmt.Sprint(fields[i])] = fields[i+1]
		}
		entries = append(entries, fmt.Sprintf("%v %v %v", m["context"], m["reason"], m["object"]))
	}
	return entries
}

// The README's least-privilege user can do everything the library does,
// through every driver, and the servers deny it nothing.
func TestACLLeastPrivilegeSuffices(t *testing.T) {
	servers := aclServers(t, 3, readmeRule(t))
	addrs := aclAddrs(servers)
	t.Run("drivers", func(t *testing.T) {
		for _, d := range drivers {
			t.Run(d.name, func(t *testing.T) {
				t.Parallel()
				exercise(t, servers, aclPrefix, func(opts ...redlock.Option) *redlock.Client {
					return openClient(t, d.name, addrs, append(opts, redlock.WithKeyPrefix(aclPrefix))...)
				})
			})
		}
	})
	t.Run("status", func(t *testing.T) {
		// What "redlock status" reads: a held key's TTL and its fencing
		// counter, and a free key's absence.
		c := openClient(t, "goredis", addrs, redlock.WithKeyPrefix(aclPrefix), redlock.WithFencing())
		l, err := c.TryLock(t.Context(), "status")
		require.NoError(t, err, "TryLock")
		defer l.Unlock(context.WithoutCancel(t.Context()))
		held, fenced := 0, 0 // a quorum at least: the grant and the token's write need no more
		for _, a := range addrs {
			k, free := readKeyStatus(t, a, aclPrefix+"status"), readKeyStatus(t, a, aclPrefix+"status-free")
			require.False(t, k.SharedSet || k.LegacySet, "keystatus.Read found an old counter: nothing but this version's Clients ran")
			if k.Held && k.TTL > 0 {
				held++
			}
			if k.FenceSet && k.Fence == l.Token() {
				fenced++
			}
			require.False(t, free.Held, "keystatus.Read of a free key")
		}
		require.GreaterOrEqual(t, held, c.Quorum(), "nodes on which keystatus.Read finds the held key with a TTL")
		require.GreaterOrEqual(t, fenced, c.Quorum(), "nodes on which keystatus.Read finds the lock's token")
	})
	for _, s := range servers {
		require.Empty(t, aclLog(t, s), "ACL LOG of %s: the README's rule must allow everything the drivers and the command send", s.Addr())
		// The fencing counters are under the prefix, with the locks: none
		// is outside it (in database 2, where aclAddrs put the clients).
		keys := func(pattern string) []any {
			v, err := s.Do(t.Context(), "EVAL", "redis.call('SELECT', 2) return redis.call('KEYS', ARGV[1])", "0", pattern)
			require.NoError(t, err)
			ks, _ := v.([]any)
			return ks
		}
		require.Empty(t, keys("redlock:fence:*"), "fencing counters outside the prefix %q on %s", aclPrefix, s.Addr())
		require.NotEmpty(t, keys(aclPrefix+"redlock:fence:*"), "no fencing counter under the prefix %q on %s", aclPrefix, s.Addr())
	}
}

// readKeyStatus reads what the node at addr holds for key (aclPrefix
// included), as "redlock status --prefix" does.
func readKeyStatus(t *testing.T, addr, key string) keystatus.Key {
	t.Helper()
	a, err := redisaddr.Parse(addr)
	require.NoError(t, err)
	c, err := keystatus.NewClient(a, 2*time.Second)
	require.NoError(t, err)
	defer c.Close()
	k, err := keystatus.Read(t.Context(), c, aclPrefix, key)
	require.NoError(t, err, "keystatus.Read(%s) through %s", key, a)
	require.NoError(t, k.FenceErr, "keystatus.Read(%s) through %s: the fencing counter", key, a)
	return k
}

// Every permission of the README's rule is needed: without any one of them,
// some driver's feature is refused (ACL LOG records it).
func TestACLLeastPrivilegeIsLeast(t *testing.T) {
	rule := readmeRule(t)
	for i, perm := range rule {
		if !strings.HasPrefix(perm, "+") && !strings.HasPrefix(perm, "~") && !strings.HasPrefix(perm, "%") && !strings.HasPrefix(perm, "&") {
			continue // reset, on, >password
		}
		t.Run(perm, func(t *testing.T) {
			t.Parallel()
			without := append(append([]string{}, rule[:i]...), rule[i+1:]...)
			srv := aclServers(t, 1, without)[0]
			var wg sync.WaitGroup
			for _, d := range drivers {
				wg.Go(func() { probe(t, d.name, srv) })
			}
			wg.Wait()
			log := aclLog(t, srv)
			require.NotEmpty(t, log, "without %s the drivers were refused nothing: the README's rule is not least", perm)
			t.Logf("without %s: %s", perm, log[0])
		})
	}
}

// probe runs every feature once through the named driver against srv as the
// ACL user, without asserting that any works: short deadlines, errors
// ignored.
func probe(t *testing.T, name string, srv *redistest.Server) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	addrs := aclAddrs([]*redistest.Server{srv})
	opts := []redlock.Option{
		redlock.WithKeyPrefix(aclPrefix), redlock.WithTTL(time.Second), redlock.WithNodeTimeout(300 * time.Millisecond),
		redlock.WithBackoff(redlock.ConstantBackoff(time.Minute)),
	}
	key := "probe-" + name
	channel := driver.ReleaseChannel(aclPrefix + key)
	for _, c := range []*redlock.Client{
		openClient(t, name, addrs, opts...),
		openClient(t, name, addrs, append(opts, redlock.WithFencing())...),
	} {
		l, err := c.TryLock(ctx, key)
		if err != nil {
			continue
		}
		l.Extend(ctx, time.Second)
		l.TTL(ctx)
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if w, err := c.Lock(wctx, key); err == nil {
				w.Unlock(ctx)
			}
		}()
		numSubWait(ctx, srv, channel, func(n int64) bool { return n > 0 })
		l.Unlock(ctx)
		<-done
		wcancel()
		numSubWait(ctx, srv, channel, func(n int64) bool { return n == 0 }) // the UNSUBSCRIBE
		dctx, dcancel := context.WithTimeout(ctx, time.Second)
		c.Do(dctx, key, func(context.Context) error { return nil })
		dcancel()
	}
	// What "redlock status" reads.
	if a, err := redisaddr.Parse(addrs[0]); err == nil {
		if kc, err := keystatus.NewClient(a, time.Second); err == nil {
			keystatus.Read(ctx, kc, aclPrefix, aclPrefix+key)
			kc.Close()
		}
	}
}

// numSubWait waits up to a second until the number of subscribers of channel
// on srv satisfies ok.
func numSubWait(ctx context.Context, srv *redistest.Server, channel string, ok func(int64) bool) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		v, err := srv.Do(ctx, "PUBSUB", "SHARDNUMSUB", channel)
		if r, isArray := v.([]any); err == nil && isArray && len(r) == 2 {
			if n, _ := r[1].(int64); ok(n) {
				return
			}
		}
	}
}

// readmeClusterRule returns the README's least-privilege rule with the
// permissions it says to add on a Redis Cluster node.
func readmeClusterRule(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	const head = "On a Redis Cluster\n  node add `"
	_, rest, ok := strings.Cut(string(readme), head)
	require.True(t, ok, "README.md does not say %q", head)
	perms, _, ok := strings.Cut(rest, "`")
	require.True(t, ok)
	return append(readmeRule(t), strings.Fields(perms)...)
}

// The README's least-privilege user, with what it adds on a Redis Cluster
// node, can do everything the library does on a cluster of two shards
// through every driver with a cluster client, and the servers deny it
// nothing. It said to add +cluster|nodes alone: every driver's client then
// failed every command with NOPERM for CLUSTER SLOTS, the slot map.
func TestACLLeastPrivilegeCluster(t *testing.T) {
	rule := readmeClusterRule(t)
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(redistest.WithPassword(adminPass)))
	for _, s := range c.Servers() {
		_, err := s.Do(t.Context(), append([]string{"ACL", "SETUSER", aclUser}, rule...)...)
		require.NoError(t, err, "ACL SETUSER %s %s", aclUser, strings.Join(rule, " "))
	}
	seeds := c.Seeds()
	addr := "redis://" + aclUser + ":" + aclPassword + "@" + seeds[0] + "?cluster=true&addr=" + strings.Join(seeds[1:], "&addr=")
	for _, d := range []string{"goredis", "rueidis", "valkeygo"} {
		t.Run(d, func(t *testing.T) {
			// The shard that hears the key's releases.
			shard := c.SlotShard(redistest.KeySlot(driver.ReleaseChannel(aclPrefix + "exercise-" + t.Name())))
			exercise(t, []*redistest.Server{shard.Primary()}, aclPrefix, func(opts ...redlock.Option) *redlock.Client {
				return openClient(t, d, []string{addr}, append(opts, redlock.WithKeyPrefix(aclPrefix))...)
			})
		})
	}
	for _, s := range c.Servers() {
		require.Empty(t, aclLog(t, s), "ACL LOG of %s: the README's rule for a cluster node must allow everything the drivers send", s.Addr())
	}
}

// The README's rule for a cluster node lets the cluster clients of rueidis
// and valkey-go read the slot map with CLUSTER SHARDS, which they send
// instead of CLUSTER SLOTS to servers of version 8 and later (Redis 8,
// Valkey 8) and, as here, to Redis 7 when PreferClusterShards is set. The
// rule named +cluster|slots alone: every command of those clients then
// failed with NOPERM for 'cluster|shards' on such servers.
func TestACLLeastPrivilegeClusterShards(t *testing.T) {
	rule := readmeClusterRule(t)
	c := redistest.NewCluster(t, 2, redistest.WithServerOptions(redistest.WithPassword(adminPass)))
	for _, s := range c.Servers() {
		_, err := s.Do(t.Context(), append([]string{"ACL", "SETUSER", aclUser}, rule...)...)
		require.NoError(t, err, "ACL SETUSER %s %s", aclUser, strings.Join(rule, " "))
	}
	for _, d := range []struct {
		name string
		node func(t *testing.T) driver.Node
	}{
		{"rueidis", func(t *testing.T) driver.Node {
			cl, err := rueidis.NewClient(rueidis.ClientOption{
				InitAddress: c.Seeds(), Username: aclUser, Password: aclPassword,
				DisableCache: true, DisableRetry: true,
				ClusterOption: rueidis.ClusterOption{PreferClusterShards: true},
			})
			require.NoError(t, err, "rueidis.NewClient with CLUSTER SHARDS")
			t.Cleanup(cl.Close)
			return redlockrueidis.New(cl)
		}},
		{"valkeygo", func(t *testing.T) driver.Node {
			cl, err := valkey.NewClient(valkey.ClientOption{
				InitAddress: c.Seeds(), Username: aclUser, Password: aclPassword,
				DisableCache: true, DisableRetry: true,
				ClusterOption: valkey.ClusterOption{PreferClusterShards: true},
			})
			require.NoError(t, err, "valkey.NewClient with CLUSTER SHARDS")
			t.Cleanup(cl.Close)
			return valkeygo.New(cl)
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			shard := c.SlotShard(redistest.KeySlot(driver.ReleaseChannel(aclPrefix + "exercise-" + t.Name())))
			exercise(t, []*redistest.Server{shard.Primary()}, aclPrefix, func(opts ...redlock.Option) *redlock.Client {
				rc, err := redlock.New([]driver.Node{d.node(t)}, append(opts, redlock.WithKeyPrefix(aclPrefix))...)
				require.NoError(t, err)
				t.Cleanup(func() { rc.Close() })
				return rc
			})
		})
	}
	for _, s := range c.Servers() {
		require.Empty(t, aclLog(t, s), "ACL LOG of %s: the README's rule for a cluster node must allow CLUSTER SHARDS", s.Addr())
	}
}
