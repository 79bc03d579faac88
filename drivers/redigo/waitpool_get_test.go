package redigo_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/drivers/redigo"
	"github.com/go-redlock/redlock/redistest"
)

// A get on a pool of New's that waits (Wait and MaxActive) that returns a
// connection gives it to the call: the get's context, canceled by the get's
// own goroutine as it returned, was seen ended by DialUntilDone before the
// connection arrived, and the call failed with "context canceled" (its
// caller's context live, the node open), the connection closed unused.
func TestNewWaitPoolGetNotCanceledByItsEnd(t *testing.T) {
	srv := redistest.NewServer(t)
	pool := &redis.Pool{Wait: true, MaxActive: 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", srv.Addr()) }}
	t.Cleanup(func() { pool.Close() })
	n := redigo.New(pool)
	t.Cleanup(func() { n.Close() })
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for g := range 50 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := n.SetNX(t.Context(), fmt.Sprint("k", g, "-", i), "v", time.Minute); err != nil {
					select {
					case errs <- fmt.Errorf("call %d of goroutine %d: %w", i, g, err):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}
