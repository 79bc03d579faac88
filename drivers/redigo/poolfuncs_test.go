package redigo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
)

// A node of New returns each call by its context's end whatever the pool's
// functions that take no context do, as redigo's documentation shows them:
// a Dial that connects with redis.Dial and logs in with AUTH, and a
// TestOnBorrow that PINGs a pooled connection (its example, those idle for
// a minute; here every one), on connections without timeouts. Once the
// server stops answering (paused), a call cut short by its context loses its
// connection, so the next one dials, and Dial's AUTH waits for ever; the
// connections left in the pool wait in TestOnBorrow's PING. With Wait and
// MaxActive, the calls whose Dial waits hold the pool's connections too, and
// the others wait for one, as long as their contexts allow.
func TestNewPoolFunctionsWithoutContext(t *testing.T) {
	dial := func(addr string) func() (redis.Conn, error) {
		return func() (redis.Conn, error) {
			c, err := redis.Dial("tcp", addr)
			if err != nil {
				return nil, err
			}
			if _, err := c.Do("AUTH", "pw"); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
	}
	for _, tc := range []struct {
		name string
		pool func(addr string) *redis.Pool
	}{
		{"Dial", func(addr string) *redis.Pool {
			return &redis.Pool{Dial: dial(addr), MaxIdle: 8}
		}},
		{"DialWait", func(addr string) *redis.Pool {
			return &redis.Pool{Dial: dial(addr), MaxIdle: 8, MaxActive: 4, Wait: true}
		}},
		{"TestOnBorrow", func(addr string) *redis.Pool {
			return &redis.Pool{
				DialContext: func(ctx context.Context) (redis.Conn, error) {
					return redis.DialContext(ctx, "tcp", addr, redis.DialPassword("pw"))
				},
				MaxIdle: 8,
				TestOnBorrow: func(c redis.Conn, _ time.Time) error {
					_, err := c.Do("PING")
					return err
				},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.NewServer(t, redistest.WithPassword("pw"))
			pool := tc.pool(srv.Addr())
			t.Cleanup(func() { pool.Close() })
			n := redigo.New(pool)
			t.Cleanup(func() { n.Close() })
			calls := func(timeout time.Duration) <-chan struct{} {
				done := make(chan struct{})
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), timeout)
						defer cancel()
						_, _ = n.Extend(ctx, "k", "v", time.Minute)
					})
				}
				go func() { wg.Wait(); close(done) }()
				return done
			}
			<-calls(time.Second) // connections in the pool

			require.NoError(t, srv.Pause())
			t.Cleanup(func() { srv.Resume() }) // first: the calls left behind end
			for round := range 3 {
				start := time.Now()
				select {
				case <-calls(200 * time.Millisecond):
				case <-time.After(5 * time.Second):
					t.Fatalf("round %d: calls of 200ms still running after 5s", round)
				}
				elapsed := time.Since(start)
				t.Logf("round %d: %v", round, elapsed)
				require.Less(t, elapsed, 700*time.Millisecond, "round %d: calls of 200ms", round)
			}
		})
	}
}
