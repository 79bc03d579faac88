package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	redigolib "github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"
	rueidislib "github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	valkeylib "github.com/valkey-io/valkey-go"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/drivers/redigo"
	rueidisdriver "github.com/go-redlock/redlock/drivers/rueidis"
	"github.com/go-redlock/redlock/drivers/valkeygo"
	"github.com/go-redlock/redlock/redistest"
)

// userNodes makes, for each Redis driver, a node over a client the user
// configured (the driver's New) on addr; the client is closed at the test's
// end, not by the node.
var userNodes = map[string]func(t *testing.T, addr string) driver.Node{
	"goredis": func(t *testing.T, addr string) driver.Node {
		rc := goredislib.NewClient(&goredislib.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { rc.Close() })
		return goredis.New(rc)
	},
	"redigo": func(t *testing.T, addr string) driver.Node {
		pool := &redigolib.Pool{
			DialContext: func(ctx context.Context) (redigolib.Conn, error) { return redigolib.DialContext(ctx, "tcp", addr) },
			MaxIdle:     16,
		}
		t.Cleanup(func() { pool.Close() })
		return redigo.New(pool)
	},
	"rueidis": func(t *testing.T, addr string) driver.Node {
		rc, err := rueidislib.NewClient(rueidislib.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		t.Cleanup(rc.Close)
		return rueidisdriver.New(rc)
	},
	"valkeygo": func(t *testing.T, addr string) driver.Node {
		vc, err := valkeylib.NewClient(valkeylib.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		require.NoError(t, err)
		t.Cleanup(vc.Close)
		return valkeygo.New(vc)
	},
}

// A call still waiting in a node's local queue (its calls in flight on a
// stalled server) when the node is closed is never sent: it fails with
// driver.ErrClosed, as a call after Close does, also on a node over the
// user's client, which Close leaves open. Calls already sent may still be
// applied when the server resumes.
func TestRedisQueuedCallNotSentAfterClose(t *testing.T) {
	for name, newNode := range userNodes {
		t.Run(name, func(t *testing.T) {
			srv := redistest.NewServer(t)
			n := newNode(t, srv.Addr())
			_, err := n.SetNX(t.Context(), "warm", "v", time.Minute)
			require.NoError(t, err)
			q, ok := n.(driver.Queuer)
			require.True(t, ok, "a %s node reports its queue (driver.Queuer)", name)

			require.NoError(t, srv.Pause())
			resumed := false
			t.Cleanup(func() {
				if !resumed {
					srv.Resume()
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			// Calls, a millisecond apart, until two of them wait in the
			// queue behind those in flight.
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				errs = map[string]error{}
			)
			for i := 0; q.Pending().Depth < 2; i++ {
				require.Less(t, i, 1000, "no call queued behind those in flight")
				key := fmt.Sprint("q", i)
				wg.Go(func() {
					_, err := n.SetNX(ctx, key, "v", time.Minute)
					mu.Lock()
					errs[key] = err
					mu.Unlock()
				})
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // the last calls reach the queue
			queued := q.Pending().Depth
			require.NoError(t, n.Close())
			require.NoError(t, srv.Resume())
			resumed = true
			wg.Wait()
			closed := 0
			for key, err := range errs {
				if !errors.Is(err, driver.ErrClosed) {
					continue
				}
				closed++
				got, err := srv.Do(t.Context(), "EXISTS", key)
				require.NoError(t, err)
				require.EqualValues(t, 0, got, "%s failed with ErrClosed, but was sent after Close", key)
			}
			require.GreaterOrEqual(t, closed, queued, "%d calls were queued at Close; %d failed with ErrClosed: the others were sent after it", queued, closed)
		})
	}
}
