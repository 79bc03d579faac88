package redigo

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/fakeredis"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// slowServer answers every command it reads with :1, each reply delay after
// the last: a server that trickles its replies, which a redis-server cannot be
// made to do. It serves until the test ends.
func slowServer(t *testing.T, delay time.Duration) string {
	return fakeredis.Serve(t, func([]string) string {
		time.Sleep(delay)
		return ":1\r\n"
	})
}

// A pipeline's reads are bounded by its deadline: the whole read, not each
// reply anew. With 32 commands and a server that answers each 80ms after the
// last, a 100ms deadline must end the read by about 100ms, not 2.56s (each
// read given the deadline anew never waits past it). The bound, 1.5s, leaves
// a loaded machine 15 times the deadline, and stays below what a read
// bounded reply by reply takes whatever the load.
func TestPipelineReadsBoundedByDeadline(t *testing.T) {
	addr := slowServer(t, 80*time.Millisecond)
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := make([]*batch.Call[rediscmd.Cmd, rediscmd.Result], 32)
	idx := make([]int, len(calls))
	for i := range calls {
		calls[i] = &batch.Call[rediscmd.Cmd, rediscmd.Result]{Cmd: rediscmd.Release("k", "v")}
		idx[i] = i
	}
	replies, errs := make([]any, len(calls)), make([]error, len(calls))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	pipeline(ctx, c, calls, idx, true, replies, errs)
	took := time.Since(start)
	t.Logf("pipeline took %v; errs %v", took, errs)
	if took > 1500*time.Millisecond {
		t.Errorf("pipeline with a 100ms deadline read for %v", took)
	}
}
