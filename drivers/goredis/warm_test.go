package goredis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/internal/testproxy"
	"github.com/go-redlock/redlock/redistest"
)

// Warm, after the identity question made one connection, leaves warmConns
// connections idle in the pool of a node from Open (it dials one), does
// nothing when they are there, and the first lone call then takes one for
// its lane without a dial, and without the warmer making a spare; a
// node over a caller's client is not warmed, and a closed node's Warm is
// ErrClosed.
func TestWarmLeavesConnectionsIdle(t *testing.T) {
	s := redistest.NewServer(t)
	n := openNode(t, s.Addr())
	_, err := n.Identity(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 1, n.lanes.client.PoolStats().TotalConns)

	require.NoError(t, n.Warm(t.Context()))
	st := n.lanes.client.PoolStats()
	require.EqualValues(t, warmConns, st.TotalConns, "Warm dialed the connections missing")
	require.EqualValues(t, warmConns, st.IdleConns, "and left them idle")
	require.NoError(t, n.Warm(t.Context()))
	require.Equal(t, st.Misses, n.lanes.client.PoolStats().Misses, "a second Warm dialed")

	ok, err := n.SetNX(lone(t.Context()), "k", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	n.warm.wg.Wait() // a spare the call had the warmer make, if any
	require.EqualValues(t, warmConns, n.lanes.client.PoolStats().TotalConns, "the first call after Warm dialed")

	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer rdb.Close()
	theirs := New(rdb).(*node)
	require.NoError(t, theirs.Warm(t.Context()))
	require.Zero(t, rdb.PoolStats().TotalConns, "a caller's client was warmed")

	require.NoError(t, n.Close())
	require.ErrorIs(t, n.Warm(t.Context()), driver.ErrClosed)
}

// The first call sent alone after Warm goes out on a connection made: over
// a server whose every new connection answers only 1s after it was made
// (testproxy.FirstReplyDelay), with a network timeout of 500ms, on 40 fresh nodes at once,
// each asked its identity first (as redlock.Client.Connect does), then
// warmed. Without Warm, the warmer's background PING, which makes the spare
// at that first call, can take the one idle connection before the SET, which
// then dials and here fails with its deadline: this test failed 5 runs of 5
// (-race) with Warm left out, and one node at a time, behind a proxy of
// 300ms, 7 first SETs of 100 took that long. With Warm, the call finds the
// spare made, and the warmer starts none.
func TestWarmFirstCallDialsNot(t *testing.T) {
	addr := testproxy.New(t, redistest.NewServer(t).Addr(), testproxy.FirstReplyDelay(time.Second)).Addr()
	const nodes = 40
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		n := openNode(t, addr)
		wg.Go(func() {
			if _, errs[i] = n.Identity(t.Context()); errs[i] != nil {
				return
			}
			if errs[i] = n.Warm(t.Context()); errs[i] != nil {
				return
			}
			ctx := driver.WithNetworkTimeout(t.Context(), 500*time.Millisecond)
			_, errs[i] = n.SetNX(ctx, fmt.Sprintf("k%d", i), "v", time.Minute)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "node %d", i)
	}
}

// A call that meets the pool of a node from Open with one idle connection
// takes it and dials none within its node timeout, also when the warmer
// makes a spare: over a link whose every reply takes 60ms
// (testproxy.ReplyDelay) and whose new connections answer 1.5s after they
// were made (testproxy.FirstReplyDelay), with a node timeout above a round
// trip and below a dial and its handshake: 240ms, which sends a lone call
// on the node's lane (Lane: the lane keeps the connection, and the warmer
// makes a spare after the call), or 800ms, which sends it through the pool
// (Pool: the connection goes back to it, no spare is needed). The pool
// meets that state after the identity question (FirstCall, without Warm),
// and after Warm when a call on the lane timed out, which removed the
// lane's connection (AfterTimeout: a later call, which Warm does not
// cover; the server is paused while that call waits, so that it times out
// whatever the load). The warmer's seam goOn lets a spare being made take
// the idle connection first, if one is: its PING then holds it for a round
// trip, and the call, which before the fix met that case every time,
// dialed and failed with its deadline. Each subtest has a server of its
// own, which AfterTimeout pauses.
func TestWarmOneIdleCallDialsNot(t *testing.T) {
	t.Parallel()
	const onLane = 240 * time.Millisecond // at most batch.CancelLag: a lone call goes on the lane
	for _, path := range []struct {
		name    string
		timeout time.Duration
		spare   int // connections the warmer makes after the call
	}{
		{"Lane", onLane, 1},
		{"Pool", 800 * time.Millisecond, 0},
	} {
		for _, state := range []struct {
			name    string
			prepare func(t *testing.T, n *node, srv *redistest.Server)
		}{
			{"FirstCall", func(*testing.T, *node, *redistest.Server) {}},
			{"AfterTimeout", func(t *testing.T, n *node, srv *redistest.Server) {
				require.NoError(t, n.Warm(t.Context()))
				ok, err := n.SetNX(driver.WithNetworkTimeout(t.Context(), onLane), t.Name()+"/lane", "v", time.Minute)
				require.NoError(t, err)
				require.True(t, ok)
				// The server answers the call only once it returned. A
				// reply that the proxy merely holds back longer than the
				// call's deadline can still be read as answered: Go ends
				// a read at its deadline by a timer of the runtime's, run
				// by the thread of the P that set it, and the proxy, in
				// this process, may write the reply and the poller wake
				// the read on the other P while that thread is held (the
				// likely cause of this call's one failure with no error,
				// a reply held 60ms against a deadline of 30ms, under
				// load 14). A reply already waiting on the lane would
				// still be read as this call's, and fail the ErrorIs.
				require.NoError(t, srv.Pause())
				_, err = n.SetNX(driver.WithNetworkTimeout(t.Context(), 30*time.Millisecond), t.Name()+"/timeout", "v", time.Minute)
				require.NoError(t, srv.Resume())
				require.ErrorIs(t, err, context.DeadlineExceeded, "the call on the lane did not time out")
			}},
		} {
			t.Run(path.name+"/"+state.name, func(t *testing.T) {
				t.Parallel()
				srv := redistest.NewServer(t)
				p := testproxy.New(t, srv.Addr(), testproxy.FirstReplyDelay(1500*time.Millisecond), testproxy.ReplyDelay(60*time.Millisecond))
				n := openNode(t, p.Addr())
				_, err := n.Identity(t.Context())
				require.NoError(t, err)
				state.prepare(t, n, srv)
				n.warm.wg.Wait() // a spare being made, if any
				c := n.lanes.client
				st := c.PoolStats()
				require.EqualValues(t, 1, st.IdleConns, "the pool's idle connections before the call")
				require.EqualValues(t, 1, st.TotalConns, "the pool's connections before the call")

				hits := st.Hits
				n.warm.goOn = func() {
					n.warm.mu.Lock()
					spare := n.warm.pending
					n.warm.mu.Unlock()
					if spare == nil {
						return // none being made: nothing takes the connection
					}
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for c.PoolStats().Hits == hits { // until the spare takes a connection, or ends
						select {
						case <-spare:
							return
						case <-tick.C:
						}
					}
				}
				accepted := p.Accepted()
				ok, err := n.SetNX(driver.WithNetworkTimeout(t.Context(), path.timeout), t.Name(), "v", time.Minute)
				require.NoError(t, err, "the call dialed within its node timeout")
				require.True(t, ok)
				n.warm.wg.Wait()
				require.Equal(t, accepted+int64(path.spare), p.Accepted(), "connections made: the spare alone, after the call")
				st = c.PoolStats()
				require.EqualValues(t, 1+path.spare, st.TotalConns, "the pool's connections after the call")
				require.EqualValues(t, 1, st.IdleConns, "the pool's idle connections after the call")
			})
		}
	}
}
