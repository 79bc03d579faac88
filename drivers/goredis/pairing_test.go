package goredis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
	"github.com/go-redlock/redlock/redistest"
)

// Every reply goes to the command it answers, also while calls time out by
// the dozen (deadlines of 1-40ms, half of them as network timeouts behind
// the node's queue), the server is stopped and resumed (SIGSTOP, SIGCONT),
// fresh nodes connect, and the server forgets its scripts (NOSCRIPT): a SET
// NX of a fresh key never answers "held", a release of a key that its SET
// set never answers "not held", and a release of a key never set never
// answers "released"; no reply is of another command's type. A stale reply
// read as a later command's would be one of those: a release that a stopped
// server confirmed, say (TestRedisUnlockWithEndedContext in package redlock
// once saw an Unlock confirmed with 3 of 5 servers stopped).
func TestNoReplyPairedWithAnotherCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t)
	var (
		mu    sync.Mutex
		node  driver.Node
		nodes []driver.Node
		bad   []string
	)
	fresh := func() error {
		n, err := goredis.Driver{}.Open(srv.Addr())
		if err != nil {
			return err
		}
		mu.Lock()
		node, nodes = n, append(nodes, n)
		mu.Unlock()
		return nil
	}
	current := func() driver.Node {
		mu.Lock()
		defer mu.Unlock()
		return node
	}
	report := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	callCtx := func() (context.Context, context.CancelFunc) {
		d := time.Duration(1+rand.IntN(40)) * time.Millisecond
		if rand.IntN(2) == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			return driver.WithNetworkTimeout(ctx, d), cancel
		}
		return context.WithTimeout(context.Background(), d)
	}
	// check reports an error that is another command's reply: a call that
	// failed otherwise (a timeout) tells nothing.
	check := func(what string, err error) bool {
		if err != nil && strings.Contains(err.Error(), "unexpected") {
			report("%s: %v", what, err)
		}
		return err == nil
	}
	require.NoError(t, fresh())
	stop := time.Now().Add(2 * time.Second)
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				n := current()
				key, value := fmt.Sprintf("pair-%d-%d", w, i), fmt.Sprintf("v-%d-%d", w, i)
				ctx, cancel := callCtx()
				set, err := n.SetNX(ctx, key, value, time.Minute)
				cancel()
				setOK := check("SET NX "+key, err) && set
				if err == nil && !set {
					report("SET NX of the fresh key %s answered held", key)
				}
				ctx, cancel = callCtx()
				released, err := n.EvalRelease(ctx, key, value)
				cancel()
				if check("release "+key, err) && setOK && !released {
					report("release of %s, which its SET set, answered not held", key)
				}
				ctx, cancel = callCtx()
				released, err = n.EvalRelease(ctx, "never-"+key, value)
				cancel()
				if check("release never-"+key, err) {
					answered.Add(1)
					if released {
						report("release of never-%s, a key never set, answered released", key)
					}
				}
			}
		})
	}
	wg.Go(func() { // stops and resumes the server
		for time.Now().Before(stop) {
			time.Sleep(time.Duration(20+rand.IntN(200)) * time.Millisecond)
			if err := srv.Pause(); err != nil {
				report("pause: %v", err)
				return
			}
			time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
			if err := srv.Resume(); err != nil {
				report("resume: %v", err)
				return
			}
		}
	})
	wg.Go(func() { // fresh nodes, and scripts forgotten
		for time.Now().Before(stop) {
			time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
			if err := fresh(); err != nil {
				report("open: %v", err)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = srv.Do(ctx, "SCRIPT", "FLUSH") // fails while paused: then the next
			cancel()
		}
	})
	wg.Wait()
	require.NoError(t, srv.Resume())
	for _, n := range nodes {
		require.NoError(t, n.Close())
	}
	assert.Empty(t, bad, "replies paired with another command")
	assert.Positive(t, answered.Load(), "releases of keys never set that answered")
}
