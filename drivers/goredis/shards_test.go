package goredis

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// A cluster node's batchers of addresses a failover left behind do not
// pile up: once the map reaches its limit, the next new address drops the
// idle batchers, never one with a batch in flight (a hung shard's keeps its
// senders, and its bound).
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
	require.Same(t, s.add("idle:0"), (*s.by.Load())["idle:0"], "a known address keeps its batcher")

	s.add("new:1")
	m := *s.by.Load()
	require.Len(t, m, 2, "the idle batchers are dropped: %v", m)
	require.Same(t, busy, m["busy:1"], "a batcher with a batch in flight is kept")
	require.NotNil(t, m["new:1"])
	require.Equal(t, minShardBatchers, s.limit)
	close(release)
	<-done
}
