package redigo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
	"github.com/go-redlock/redlock/redlock"
)

// authDial returns a pool's Dial for addr as redigo's documentation shows
// it: redis.Dial, without timeouts, then AUTH.
func authDial(addr string) func() (redis.Conn, error) {
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

// calls makes 4 calls of timeout on n at once; the channel closes once all
// returned.
func calls(n driver.Node, timeout time.Duration) <-chan struct{} {
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
	for _, tc := range []struct {
		name string
		pool func(addr string) *redis.Pool
	}{
		{"Dial", func(addr string) *redis.Pool {
			return &redis.Pool{Dial: authDial(addr), MaxIdle: 8}
		}},
		{"DialWait", func(addr string) *redis.Pool {
			return &redis.Pool{Dial: authDial(addr), MaxIdle: 8, MaxActive: 4, Wait: true}
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
			<-calls(n, time.Second) // connections in the pool

			require.NoError(t, srv.Pause())
			t.Cleanup(func() { srv.Resume() }) // first: the calls left behind end
			for round := range 3 {
				start := time.Now()
				select {
				case <-calls(n, 200*time.Millisecond):
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

// The Close of a node of New, and of a one-node redlock Client over it,
// returns at once while the gets of connections that calls cut short by
// their contexts left behind wait in the pool's Dial (for ever: a server
// that does not answer AUTH, and no timeouts), for a pool without Wait,
// whose Close races with no GetContext. With Wait (and MaxActive), Close
// waits for those gets, as redigo's Pool.Close races with a GetContext
// waiting for a connection; the calls made meanwhile return at once.
func TestNewCloseWhileDialStalls(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("Wait=%v", wait), func(t *testing.T) {
			srv := redistest.NewServer(t, redistest.WithPassword("pw"))
			pool := &redis.Pool{Dial: authDial(srv.Addr()), MaxIdle: 8}
			if wait {
				pool.Wait, pool.MaxActive = true, 16
			}
			t.Cleanup(func() { pool.Close() })
			n := redigo.New(pool)
			c, err := redlock.New([]driver.Node{n})
			require.NoError(t, err)
			<-calls(n, time.Second) // connections in the pool

			closed := make(chan error, 1)
			t.Cleanup(func() { <-closed })
			require.NoError(t, srv.Pause())
			t.Cleanup(func() { srv.Resume() }) // first: the gets left behind end
			// The first calls take the pool's connections, the next dial.
			for range 2 {
				<-calls(n, 100*time.Millisecond)
			}
			start := time.Now()
			go func() { closed <- c.Close() }()
			if wait {
				time.Sleep(100 * time.Millisecond) // Close waits for the gets
				for range 3 {
					start := time.Now()
					called := make(chan error, 1)
					go func() {
						ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
						defer cancel()
						_, err := n.SetNX(ctx, "k", "v", time.Minute)
						called <- err
					}()
					select {
					case err := <-called:
						t.Logf("a call while Close waits: %v", time.Since(start))
						require.ErrorIs(t, err, driver.ErrClosed)
						require.Less(t, time.Since(start), 100*time.Millisecond, "a call while Close waits")
					case <-time.After(5 * time.Second):
						t.Fatal("a call of 200ms made while Close waits still running after 5s")
					}
				}
				return
			}
			select {
			case err := <-closed:
				closed <- err
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Close still waiting after 5s")
			}
			t.Logf("Close: %v", time.Since(start))
			require.Less(t, time.Since(start), time.Second)
		})
	}
}
