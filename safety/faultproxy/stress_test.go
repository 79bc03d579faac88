package faultproxy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/safety/faultproxy"
)

// value returns a value of about size bytes that names its writer, so that
// a reply paired with the wrong command shows.
func value(writer string, size int) string {
	return writer + ":" + strings.Repeat("v", size)
}

// valueSize returns a value size: most small, some of several chunks of the
// proxy (toxiproxy reads 32 KiB at a time), a few of a megabyte or more.
func valueSize(r *rand.Rand) int {
	switch n := r.IntN(10); {
	case n < 6:
		return r.IntN(100)
	case n < 9:
		return r.IntN(200 << 10)
	default:
		return 1<<20 + r.IntN(1<<20)
	}
}

// faultStorm, until ctx ends, makes rounds of fault calls of p: in each,
// four goroutines make a random fault call at once, the faults last up to
// 50 ms, the four heal at once, and the proxy stays healthy for 100 ms (so
// that clients get through too). Each call is bounded by faultTimeout. The
// server kills its client connections now and then. It returns when the
// rounds have stopped.
func faultStorm(ctx context.Context, t *testing.T, p *faultproxy.Proxy, s *redistest.Server) {
	faults := []fault{
		{"SetLatency", func() error {
			return p.SetLatency(time.Duration(rand.IntN(5))*time.Millisecond, time.Duration(rand.IntN(5))*time.Millisecond)
		}},
		{"Cut", p.Cut},
		{"Blackhole", p.Blackhole},
		{"LoseReplies", p.LoseReplies},
		{"Heal", p.Heal},
	}
	all := func(pick func() fault) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { within(t, pick()) })
		}
		wg.Wait()
	}
	for round := 0; ctx.Err() == nil && !t.Failed(); round++ {
		all(func() fault { return faults[rand.IntN(len(faults))] })
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		all(func() fault { return fault{"Heal", p.Heal} })
		if round%3 == 0 { // a server that closes its connections
			_, _ = s.Do(context.Background(), "CLIENT", "KILL", "SKIPME", "yes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPipelinesUnderFaultStorm runs pipelining clients (go-redis pipelines
// and rueidis, which pipelines every goroutine's commands on one
// connection), with values from a few bytes to megabytes, through a proxy
// whose faults change all the time from several goroutines while the
// server kills connections: every fault call returns, and every reply a
// client gets is the reply to its own command (a stream that lost or
// reordered bytes and carried on would pair replies with other commands).
func TestPipelinesUnderFaultStorm(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	p := startProxy(t, s.Addr())
	ctx, cancel := context.WithTimeout(t.Context(), stressFor)
	defer cancel()

	gr := goredis.NewClient(&goredis.Options{
		Addr: p.Addr(), DialTimeout: time.Second, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, MaxRetries: -1, PoolSize: 4,
	})
	defer gr.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{p.Addr()}, DisableCache: true, DisableRetry: true,
		Dialer: net.Dialer{Timeout: time.Second}, ConnWriteTimeout: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	defer rc.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := map[string]int{}
	count := func(client string) {
		mu.Lock()
		ok[client]++
		mu.Unlock()
	}
	for g := range 4 {
		wg.Go(func() { // go-redis: SET then GET of fresh keys, pipelined
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for i := 0; ctx.Err() == nil; i++ {
				var vals []string
				pipe := gr.Pipeline()
				var gets []*goredis.StringCmd
				for j := range 1 + r.IntN(4) {
					key := fmt.Sprintf("goredis-%d-%d-%d", g, i, j)
					v := value(key, valueSize(r))
					vals = append(vals, v)
					pipe.Set(ctx, key, v, time.Minute)
					gets = append(gets, pipe.Get(ctx, key))
				}
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := pipe.Exec(cctx)
				ccancel()
				if err != nil {
					continue
				}
				for j, get := range gets {
					if get.Val() != vals[j] {
						t.Errorf("go-redis pipeline %d/%d: GET %d returned %.40q..., want %.40q...", g, i, j, get.Val(), vals[j])
						return
					}
				}
				count("go-redis")
			}
		})
		wg.Go(func() { // rueidis: one connection, every goroutine's commands pipelined on it
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("rueidis-%d-%d", g, i)
				v := value(key, valueSize(r))
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
				res := rc.DoMulti(cctx,
					rc.B().Set().Key(key).Value(v).Px(time.Minute).Build(),
					rc.B().Get().Key(key).Build())
				ccancel()
				if res[0].Error() != nil || res[1].Error() != nil {
					continue
				}
				got, err := res[1].ToString()
				if err != nil || got != v {
					t.Errorf("rueidis %d/%d: GET returned %.40q... (%v), want %.40q...", g, i, got, err, v)
					return
				}
				count("rueidis")
			}
		})
	}
	faultStorm(ctx, t, p, s)
	wg.Wait()
	t.Logf("pipelines that succeeded: %v; bytes dropped: %d", ok, p.Dropped())
	// Healed, both clients get through again (how many pipelines went
	// through during the storm depends on the machine's load).
	require.NoError(t, p.Heal())
	require.Eventually(t, func() bool {
		return gr.Set(t.Context(), "after", "x", time.Minute).Err() == nil
	}, 10*time.Second, 10*time.Millisecond, "go-redis gets through after the storm")
	require.Eventually(t, func() bool {
		return rc.Do(t.Context(), rc.B().Get().Key("after").Build()).Error() == nil
	}, 10*time.Second, 10*time.Millisecond, "rueidis gets through after the storm")
}
