package redigo_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
)

// The Close of a node of New over a pool that waits (Wait and MaxActive)
// returns only after what the gets it ended did in the pool, so that the
// caller's Pool.Close, after it, races with none of it. The case: a get
// waits in redigo's waitVacantConn for a free connection (none: one is held
// by the test, the other by a get stalled in the pool's Dial, AUTH to a
// paused server, which keeps Close waiting its whole second); the held
// connection goes back, handed to the waiting get, and Close cancels the get
// before the get runs again, so that redigo puts the connection back with a
// send on the channel that Pool.Close closes, outside the pool's mutex.
// Before the fix, Close returned after its second with nothing ordering that
// send before it, and the race detector reported Pool.Close (pool.go:337)
// racing with the send (pool.go:387), which panics if it comes after
// Pool.Close. One processor
// (GOMAXPROCS 1, for the handing over and Close only) keeps the get from
// running between the two, as a loaded machine may; the race detector's
// scheduler still varies the order, so the case is made in several rounds,
// each with a pool of its own. The test fails only under -race: without it,
// what it checks is that Close returns and that the calls end with it.
func TestNewCloseEndsWaitBeforePoolClose(t *testing.T) {
	const rounds = 8
	srv := redistest.NewServer(t, redistest.WithPassword("pw"))
	pools := make([]*redis.Pool, rounds)
	held := make([]redis.Conn, rounds)
	for i := range pools {
		pools[i] = &redis.Pool{Dial: authDial(srv.Addr()), MaxIdle: 2, MaxActive: 2, Wait: true}
		held[i] = pools[i].Get()
		_, err := held[i].Do("PING")
		require.NoError(t, err)
	}
	require.NoError(t, srv.Pause())
	t.Cleanup(func() { srv.Resume() }) // the stalled Dials end
	for i, pool := range pools {
		n := redigo.New(pool)
		ctx, cancel := context.WithCancel(t.Context())
		called := make(chan error, 2)
		setNX := func(key string) {
			go func() {
				_, err := n.SetNX(ctx, key, "v", time.Minute)
				called <- err
			}()
		}
		setNX("a") // its get dials: AUTH waits for the paused server
		require.Eventually(t, func() bool { return pool.ActiveCount() == 2 }, 30*time.Second, time.Millisecond, "round %d: the Dial of the first call", i)
		setNX("b")                        // its get waits for a free connection
		time.Sleep(50 * time.Millisecond) // until it waits: nothing tells
		// Close on this goroutine: a goroutine started for it could run
		// after the get, as could the one with which Close cancels it.
		// The test's timeout bounds it; the watchdog says why.
		watchdog := time.AfterFunc(30*time.Second, func() { t.Errorf("round %d: Close still waiting after 30s", i) })
		procs := runtime.GOMAXPROCS(1)
		held[i].Close()
		err := n.Close()
		runtime.GOMAXPROCS(procs)
		watchdog.Stop()
		require.NoError(t, err, "round %d: Close", i)
		// The get ran before Close's cancellation, if the scheduler
		// chose so: it took the connection and its call waits for the
		// paused server, until ctx ends.
		cancel()
		for range 2 {
			select {
			case err := <-called:
				if !errors.Is(err, driver.ErrClosed) {
					require.ErrorIs(t, err, context.Canceled, "round %d: a call in flight at Close", i)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: a call in flight at Close still running 30s after it", i)
			}
		}
		require.NoError(t, pool.Close())
	}
}
