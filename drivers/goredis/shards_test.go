package goredis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// A cluster node's batchers of addresses a failover left behind do not
// pile up: once the map reaches its limit, the next new address drops the
// idle batchers that no call looked up since the last drop, never one with a
// batch in flight (a hung shard's keeps its senders, and its bound).
func TestShardsDropIdleBatchers(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := newShards(nil, func(_ context.Context, calls []*batch.Call[rediscmd.Cmd, rediscmd.Result]) {
		entered <- struct{}{}
		<-release
	})
	busy := s.add("busy:1")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = busy.Do(t.Context(), rediscmd.SetNX("k", "v", 0))
	}()
	<-entered
	for i := range minShardBatchers - 1 {
		s.add(fmt.Sprintf("idle:%d", i))
	}
	require.Len(t, *s.by.Load(), minShardBatchers, "below the limit, nothing is dropped")
	require.Same(t, s.add("idle:0"), (*s.by.Load())["idle:0"].b, "a known address keeps its batcher")

	s.add("new:1")
	require.Len(t, *s.by.Load(), minShardBatchers+1, "the first drop: every batcher was made or used since")
	require.Equal(t, 2*(minShardBatchers+1), s.limit)
	for i := 2; len(*s.by.Load()) < s.limit; i++ { // the idle:* addresses get no call meanwhile
		s.add(fmt.Sprintf("new:%d", i))
	}
	s.add("last:1")
	m := *s.by.Load()
	for a := range m {
		require.False(t, strings.HasPrefix(a, "idle:"), "the idle batchers unused since the last drop are dropped: %s is left", a)
	}
	require.Same(t, busy, m["busy:1"].b, "a batcher with a batch in flight is kept")
	require.NotNil(t, m["new:1"], "a batcher made since the last drop is kept")
	require.NotNil(t, m["last:1"])
	require.Len(t, m, 2*(minShardBatchers+1)-(minShardBatchers-1)+1)
	require.Equal(t, 2*len(m), s.limit)
	close(release)
	<-done
}

// While a cluster node's client has no slot map, at most mapReaders calls
// read it at once, and the others wait: a read that fails fails its call
// alone, and a waiting call reads in its place; a waiting call whose context
// ends leaves; once a read succeeded, every call has the map, and no call
// reads it again.
func TestShardsLearnBoundsReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShards(nil, nil)
		var reading, reads atomic.Int32
		answer := make(chan error)
		read := func(context.Context) error {
			reads.Add(1)
			reading.Add(1)
			defer reading.Add(-1)
			return <-answer
		}
		errs := make(chan error)
		for range 6 {
			go func() { errs <- s.learn(t.Context(), read) }()
		}
		synctest.Wait()
		require.EqualValues(t, mapReaders, reading.Load(), "reads at once, of 6 calls")
		// Every call waits for the map, its command unsent: Pending
		// counts the readers and the others.
		time.Sleep(3 * time.Second)
		require.Equal(t, driver.Pending{Depth: 6 + 1, Oldest: 3 * time.Second}, s.pending(driver.Pending{Depth: 1}),
			"pending with 6 calls in learn for 3s and 1 in the first batcher's queue")

		answer <- errors.New("seed down")
		require.ErrorContains(t, <-errs, "seed down", "the call whose read failed")
		synctest.Wait()
		require.EqualValues(t, mapReaders, reading.Load(), "a waiting call reads in place of the failed read")
		require.EqualValues(t, mapReaders+1, reads.Load())

		ctx, cancel := context.WithCancel(t.Context())
		go func() { errs <- s.learn(ctx, read) }()
		synctest.Wait()
		cancel()
		require.ErrorIs(t, <-errs, context.Canceled, "a waiting call whose context ended")

		answer <- nil // one of the two reads succeeds: its call and the 3 waiting return
		for i := range 4 {
			require.NoError(t, <-errs, "call %d, once a read succeeded", i)
		}
		answer <- nil
		require.NoError(t, <-errs, "the read that went on")
		require.NoError(t, s.learn(t.Context(), read), "a call once the map is known")
		require.EqualValues(t, mapReaders+1, reads.Load(), "reads")
		require.True(t, s.known.Load())
		require.Equal(t, driver.Pending{}, s.pending(driver.Pending{}), "pending once every call left learn")
	})
}

// A cluster node whose cluster has more primaries than minShardBatchers
// keeps one batcher per primary while they serve its calls, however idle
// each is between calls: a batcher made again loses what it learned of its
// server (its round trip, when it last answered), and one dropped while a
// caller has it gives its primary a second queue and more connections. The
// slot map is the client's own (ClusterSlots: no server is dialed).
func TestShardsKeepLivePrimaries(t *testing.T) {
	const primaries = minShardBatchers + 4
	s, keys := knownShards(t, primaries)
	first := batch.New(s.exec, batch.Senders, batch.MaxBatch)
	had := make([]*batcher, primaries)
	remade := 0
	const rounds = 5
	for round := range rounds {
		for i, k := range keys {
			b, addr := s.batcher(t.Context(), k, first)
			require.True(t, strings.HasSuffix(addr, fmt.Sprintf(":%d", 1+i)), "key %s: primary %s", k, addr)
			require.False(t, b == first, "key %s: the first batcher, with the slot map known", k)
			if round > 0 && b != had[i] {
				remade++
			}
			had[i] = b
		}
	}
	if remade > 0 {
		t.Fatalf("%d calls, one per primary in turn, of a cluster of %d primaries: %d batchers made again for a primary that had one (batchers now %d, limit %d)",
			rounds*primaries, primaries, remade, len(*s.by.Load()), s.limit)
	}
}

// BenchmarkShardsBatcher is the routing cost that a call on a cluster node
// pays before its batcher's Do: the lookup of its key's primary
// (ClusterClient.MasterForKey) and of that primary's batcher, over 3
// primaries.
func BenchmarkShardsBatcher(b *testing.B) {
	s, keys := knownShards(b, 3)
	first := batch.New(s.exec, batch.Senders, batch.MaxBatch)
	ctx := b.Context()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.batcher(ctx, keys[i%len(keys)], first)
	}
}

// knownShards returns the shards of a cluster node of n primaries whose
// client has its slot map, its own (ClusterSlots: no server is dialed), and a
// key served by each primary, in the primaries' order (the i-th at port
// 1+i), the slots split evenly.
func knownShards(tb testing.TB, n int) (*shards, []string) {
	var slots []redis.ClusterSlot
	for i := range n {
		start, end := i*driver.Slots/n, (i+1)*driver.Slots/n-1
		slots = append(slots, redis.ClusterSlot{Start: start, End: end, Nodes: []redis.ClusterNode{{Addr: fmt.Sprintf("127.0.0.1:%d", 1+i)}}})
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) { return slots, nil },
	})
	tb.Cleanup(func() { cc.Close() })
	s := newShards(cc, func(context.Context, []*batch.Call[rediscmd.Cmd, rediscmd.Result]) {})
	s.learned()
	keys := make([]string, n)
	for i, found := 0, 0; found < n; i++ {
		k := fmt.Sprintf("k%d", i)
		for p, r := range slots {
			if slot := driver.HashSlot(k); keys[p] == "" && slot >= r.Start && slot <= r.End {
				keys[p] = k
				found++
			}
		}
	}
	return s, keys
}
