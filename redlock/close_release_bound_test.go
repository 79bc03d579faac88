package redlock_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// gatedCloseRelease is a memory node (only driver.Node: its releases are
// EvalRelease) whose releases wait for gate (or their context's end) before
// they reach it.
type gatedCloseRelease struct {
	m    *memory.Node
	gate chan struct{}
}

func (n gatedCloseRelease) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.SetNX(ctx, key, value, ttl)
}

func (n gatedCloseRelease) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	select {
	case <-n.gate:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return n.m.EvalRelease(ctx, key, value)
}

func (n gatedCloseRelease) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Extend(ctx, key, value, ttl)
}

func (n gatedCloseRelease) Close() error { return n.m.Close() }

// labelled counts the goroutines that carry the profiler label key=value
// (runtime/pprof): those started, directly or not, by a goroutine that had
// it.
func labelled(t *testing.T, key, value string) int {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	label := fmt.Sprintf("# labels: {%q:%q}", key, value)
	n, count := 0, 0
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Sscanf(line, "%d @", &count); err == nil {
			continue
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, label) {
			n += count
		}
	}
	require.NoError(t, sc.Err())
	return n
}

// Close releases the locks of the Do's still running from at most
// MaxRounds goroutines, as many as the releases that run at once: before,
// it started one per lock, 2,048 here at once, all but 512 of them only to
// wait for their turn (and 20,000 for 20,000 Do's). Counted as the
// goroutines that carry the label of Close's goroutine while the releases
// wait at the node (one node: a release's call runs on its own goroutine).
// Every lock is still released, each Do told that Close ended its lock.
func TestCloseReleasesDoFromBoundedGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const locks = 4 * redlock.MaxRounds
		m := memory.New()
		n := gatedCloseRelease{m: m, gate: make(chan struct{})}
		c, err := redlock.New([]driver.Node{n}, redlock.WithTTL(time.Hour), redlock.WithNodeTimeout(100*time.Millisecond))
		require.NoError(t, err)
		proceed := holdAll(t, c, locks) // their functions ignore their context
		closed := make(chan error, 1)
		go pprof.Do(context.Background(), pprof.Labels("test", "close"), func(context.Context) { closed <- c.Close() })
		synctest.Wait()                             // Close's releases wait at the node, or for their turn
		started := labelled(t, "test", "close") - 1 // Close's own goroutine
		close(n.gate)
		require.NoError(t, <-closed)
		assert.Positive(t, started, "no goroutine of Close's releases found")
		assert.LessOrEqual(t, started, redlock.MaxRounds, "goroutines that Close started to release %d locks", locks)
		for i := range locks {
			require.False(t, m.Holds(fmt.Sprint("k", i)), "k%d held once Close returned", i)
		}
		for i, err := range proceed() {
			require.ErrorIs(t, err, redlock.ErrLockLost, "Do %d", i)
			require.NotErrorIs(t, err, redlock.ErrUnavailable, "Do %d: its release failed", i)
		}
	})
}

// goexitUnlock calls runtime.Goexit when an Unlock starts.
type goexitUnlock struct{ redlock.NopObserver }

func (goexitUnlock) Unlock(context.Context, redlock.UnlockStart) (context.Context, func(redlock.UnlockDone)) {
	runtime.Goexit()
	return nil, nil
}

// An observer that calls runtime.Goexit in every release of Close's ends the
// goroutine of each: the locks left are still released, each Do told, when
// there are more of them than Close's goroutines. Had the goroutines not
// been replaced, the locks beyond the first MaxRounds would stay held, and
// their Do's would wait for Close's release for ever.
func TestCloseReleasesDoPastObserverGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const locks = redlock.MaxRounds + 100
		mem, nodes := memNodes(3)
		c, err := redlock.New(nodes, redlock.WithObserver(goexitUnlock{}), redlock.WithTTL(time.Hour),
			redlock.WithNodeTimeout(100*time.Millisecond))
		require.NoError(t, err)
		proceed := holdAll(t, c, locks) // their functions ignore their context
		require.NoError(t, c.Close())
		synctest.Wait() // the releases that outlived Close's waits, if any
		for i := range locks {
			require.Zero(t, holders(mem, fmt.Sprint("k", i)), "k%d held after Close", i)
		}
		for i, err := range proceed() {
			require.ErrorIs(t, err, redlock.ErrLockLost, "Do %d", i)
		}
	})
}
