package goredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// A node of New over a cluster client with ReadOnly (which RouteByLatency
// and RouteRandomly set too) returns each call by its context's end while a
// shard hangs, also on the keys of the other shards. Such a client routes
// every command by its flags from COMMAND, which it asks of up to three
// random nodes, one after the other, under a lock that every command waits
// on, each bounded by 5s of its own rather than by the command's context
// (ContextTimeoutEnabled), and again before every command until a node
// answers: here never, as the user may not run COMMAND (the README's
// least-privilege user may not), and the hung shard's primary is one of the
// nodes asked. The calls may fail (go-redis holds them); they must not
// outlast their contexts.
func TestNewClusterReadOnlyHungShard(t *testing.T) {
	c := redistest.NewCluster(t, 2)
	for _, s := range c.Servers() {
		_, err := s.Do(t.Context(), "ACL", "SETUSER", "locker", "reset", "on", ">pw", "~*", "&*", "+@all", "-command")
		require.NoError(t, err)
	}
	healthy, hung := c.Shards()[0], c.Shards()[1]
	key := func(i int) string { return c.KeyOn(healthy, fmt.Sprintf("read-only-%d-", i)) }
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{healthy.Primary().Addr()},
		Username:              "locker",
		Password:              "pw",
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		ReadOnly:              true,
	})
	t.Cleanup(func() { cc.Close() })
	n := goredis.New(cc)
	t.Cleanup(func() { n.Close() })
	require.NoError(t, hung.Primary().Pause())
	t.Cleanup(func() { hung.Primary().Resume() }) // first: the calls left behind end

	for round := range 3 {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
				defer cancel()
				_, _ = n.SetNX(ctx, key(i), "v", time.Minute)
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		t.Logf("round %d: %v", round, elapsed)
		require.Less(t, elapsed, 700*time.Millisecond, "round %d: calls of 200ms on a healthy shard's keys", round)
	}
}
