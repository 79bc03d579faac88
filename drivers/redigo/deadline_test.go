package redigo

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/go-redlock/redlock/internal/batch"
	"github.com/go-redlock/redlock/internal/rediscmd"
)

// slowServer answers every command it reads with :1, each reply delay after
// the last: a server that trickles its replies, which a redis-server cannot be
// made to do. It serves until the test ends.
func slowServer(t *testing.T, delay time.Duration) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if !strings.HasPrefix(line, "*") {
						continue
					}
					// Skip the rest of the array: its bulk strings, two lines each.
					var n int
					for _, ch := range line[1 : len(line)-2] {
						n = n*10 + int(ch-'0')
					}
					for i := 0; i < 2*n; i++ {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					time.Sleep(delay)
					if _, err := c.Write([]byte(":1\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// A pipeline's reads are bounded by its deadline: the whole read, not each
// reply anew. With 8 commands and a server that answers each 80ms after the
// last, a 100ms deadline must end the read by about 100ms, not 640ms.
func TestPipelineReadsBoundedByDeadline(t *testing.T) {
	addr := slowServer(t, 80*time.Millisecond)
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := make([]*batch.Call[rediscmd.Cmd, rediscmd.Result], 8)
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
	if took > 400*time.Millisecond {
		t.Errorf("pipeline with a 100ms deadline read for %v", took)
	}
}
