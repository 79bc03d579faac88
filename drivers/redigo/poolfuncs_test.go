package redigo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

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
			// The pool's functions wait until the server resumes, at the
			// test's end: calls that return at all returned by their
			// contexts' end, not theirs (the bound is a watchdog).
			for round := range 3 {
				select {
				case <-calls(n, 200*time.Millisecond):
				case <-time.After(30 * time.Second):
					t.Fatalf("round %d: calls of 200ms still running after 30s", round)
				}
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
// waiting for a connection, but no longer than a second (they are in the
// pool's Dial, past that wait); the calls made meanwhile return at once.
// The test asserts orders, not durations: the stalled Dials end only when
// the server resumes, at the test's end, so a Close (or a call) that waited
// for them cannot return before; the bounds are watchdogs, many times what
// the steps take.
func TestNewCloseWhileDialStalls(t *testing.T) {
	const watchdog = 30 * time.Second
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
			go func() { closed <- c.Close() }()
			if !wait {
				select {
				case err := <-closed:
					closed <- err
					require.NoError(t, err)
				case <-time.After(watchdog):
					t.Fatal("Close waits for the gets stalled in the pool's Dial")
				}
				return
			}
			// Close waits for the gets. A call made before it began
			// dials, and ends by its context; one made once it waits
			// fails with ErrClosed at once.
			setNX := func(ctx context.Context) <-chan error {
				called := make(chan error, 1)
				go func() {
					_, err := n.SetNX(ctx, "k", "v", time.Minute)
					called <- err
				}()
				return called
			}
			probe := func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				select {
				case err := <-setNX(ctx):
					return err
				case <-time.After(watchdog):
					t.Fatal("a call of 100ms made while Close waits still running after 30s")
					return nil
				}
			}
			give := time.Now().Add(watchdog)
			for err := probe(); !errors.Is(err, driver.ErrClosed); err = probe() {
				require.ErrorIs(t, err, context.DeadlineExceeded, "a call before Close waits")
				require.True(t, time.Now().Before(give), "no call failed with ErrClosed in 30s after Close began")
			}
			// From now on a call with no deadline returns, though
			// nothing ends it but the node's Close.
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			for i := range 3 {
				select {
				case err := <-setNX(ctx):
					require.ErrorIs(t, err, driver.ErrClosed, "call %d while Close waits", i)
				case <-time.After(watchdog):
					t.Fatalf("call %d while Close waits: waits behind it", i)
				}
			}
			// Close ends the gets' waits for a free connection and waits
			// for the rest, stalled in the pool's Dial, a second at most:
			// it returns though they stay stalled until the test's end.
			select {
			case err := <-closed:
				closed <- err
				require.NoError(t, err)
			case <-time.After(watchdog):
				t.Fatal("Close waits for the gets stalled in the pool's Dial (Wait)")
			}
		})
	}
}

// Client.Close over a node of New whose pool has Wait (and MaxActive), and
// a Dial as redigo's documentation shows it (no timeouts, then AUTH),
// returns while a get of a connection waits in that Dial for a server that
// never answers (for ever) and another waits for a free connection: Close
// ends the wait for a connection, and waits for the gets no longer than a
// second (a get still in progress then is in the pool's Dial, which
// Pool.Close does not race with). The calls in flight return
// driver.ErrClosed, and the node's goroutines end once the Dial returns
// (here, when the server closes its connections at the test's end).
func TestNewCloseWaitPoolSilentServer(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // last: after the server closed its connections
	silent := redistest.NewSilent(t)
	addr, accepted := silent.Addr(), silent.Accepted
	pool := &redis.Pool{Dial: authDial(addr), MaxIdle: 1, MaxActive: 1, Wait: true}
	t.Cleanup(func() { pool.Close() })
	n := redigo.New(pool)
	c, err := redlock.New([]driver.Node{n})
	require.NoError(t, err)

	// Two calls at once: the node sends them on two connections, one
	// getting the pool's only connection (its Dial waits for AUTH's reply),
	// the other waiting for it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	called := make(chan error, 2)
	for _, key := range []string{"a", "b"} {
		go func() {
			_, err := n.SetNX(ctx, key, "v", time.Minute)
			called <- err
		}()
	}
	require.Eventually(t, func() bool { return accepted() == 1 }, 30*time.Second, 10*time.Millisecond, "the Dial's connection")
	time.Sleep(50 * time.Millisecond) // the other get waits for the connection

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Client.Close still waiting after 30s")
	}
	for range 2 {
		select {
		case err := <-called:
			require.ErrorIs(t, err, driver.ErrClosed, "a call in flight at Close")
		case <-time.After(30 * time.Second):
			t.Fatal("a call in flight at Close still running 30s after Close")
		}
	}
	require.Equal(t, 1, accepted(), "one Dial")
}
