package redlock_test

import (
	"errors"
	"math"
	"slices"
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

func TestRegistry(t *testing.T) {
	assert.PanicsWithValue(t, "redlock: Register driver is nil", func() { redlock.Register("nil", nil) })
	assert.PanicsWithValue(t, "redlock: Register called twice for driver memory", func() { redlock.Register("memory", memory.Driver{}) })
	names := redlock.Drivers()
	assert.Contains(t, names, "memory")
	assert.True(t, slices.IsSorted(names))

	_, err := redlock.Open("nope", []string{"a"})
	require.EqualError(t, err, `redlock: unknown driver "nope" (forgotten import?)`)

	// liveNodeTimeout: with the default 200ms, on the real clock, a machine
	// that stalls the test that long fails the TryLock. Not in a bubble:
	// the stores opened by address are the process's.
	c, err := redlock.Open("memory", []string{"registry-a", "registry-b", "registry-c"}, redlock.WithNodeTimeout(liveNodeTimeout))
	require.NoError(t, err)
	defer c.Close()
	c2, err := redlock.Open("memory", []string{"registry-a", "registry-b", "registry-c"}, redlock.WithNodeTimeout(liveNodeTimeout))
	require.NoError(t, err)
	defer c2.Close()
	l, err := c.TryLock(t.Context(), "k")
	require.NoError(t, err)
	_, err = c2.TryLock(t.Context(), "k")
	require.ErrorIs(t, err, redlock.ErrNotObtained, "memory nodes opened under one address share their keys")
	require.NoError(t, l.Unlock(t.Context()))
}

// Bad input gets an error that says what was wrong: never a panic, never
// ErrNotObtained.
func TestBadInput(t *testing.T) {
	node := func() driver.Node { return memory.New() }
	three := func() []driver.Node { return []driver.Node{node(), node(), node()} }
	same := node()
	for _, tc := range []struct {
		name  string
		open  func() (*redlock.Client, error)
		wants string
	}{
		{"no nodes", func() (*redlock.Client, error) { return redlock.New(nil) }, "no nodes"},
		{"nil node", func() (*redlock.Client, error) { return redlock.New([]driver.Node{node(), nil}) }, "node 2 is nil"},
		{"typed nil node", func() (*redlock.Client, error) {
			return redlock.New([]driver.Node{node(), (*memory.Node)(nil), node()})
		}, "node 2 is a nil *memory.Node"},
		{"same node twice", func() (*redlock.Client, error) { return redlock.New([]driver.Node{same, node(), same}) }, "nodes 1 and 3 are both"},
		{"zero TTL", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithTTL(0)) }, "TTL 0s is not positive"},
		{"negative TTL", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithTTL(-time.Second)) }, "TTL -1s is not positive"},
		{"TTL within drift", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithTTL(2*time.Millisecond)) }, "too small"},
		{"node timeout not below TTL", func() (*redlock.Client, error) {
			return redlock.New(three(), redlock.WithTTL(time.Second), redlock.WithNodeTimeout(time.Second))
		}, "not smaller than the TTL"},
		{"zero node timeout", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithNodeTimeout(0)) }, "node timeout 0s is not positive"},
		// A node timeout no reply meets: every call's outcome unknown,
		// the keys of failed attempts kept till their TTL (releases time
		// out too), refusing the next attempts (--node-timeout 1ns).
		{"1ns node timeout", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithNodeTimeout(time.Nanosecond)) }, "node timeout 1ns is shorter than 100µs (MinNodeTimeout)"},
		{"node timeout just below the least", func() (*redlock.Client, error) {
			return redlock.Open("memory", []string{"nt-a"}, redlock.WithNodeTimeout(redlock.MinNodeTimeout-1))
		}, "node timeout 99.999µs is shorter than 100µs"},
		{"NaN drift", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithDriftFactor(math.NaN())) }, "drift factor NaN"},
		{"drift 1", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithDriftFactor(1)) }, "drift factor 1 is not in [0, 1)"},
		{"nil backoff", func() (*redlock.Client, error) { return redlock.New(three(), redlock.WithBackoff(nil)) }, "nil Backoff"},
		{"nil option", func() (*redlock.Client, error) { return redlock.New(three(), nil) }, "nil Option"},
		{"Open without addresses", func() (*redlock.Client, error) { return redlock.Open("memory", nil) }, "no node addresses"},
		{"Open with a bad address", func() (*redlock.Client, error) { return redlock.Open("memory", []string{"a", ""}) }, "address 2: memory: empty address"},
		{"Open with an address twice", func() (*redlock.Client, error) {
			return redlock.Open("memory", []string{"dup-a", "dup-b", "dup-a"})
		}, "nodes 1 and 3 are both dup-a"},
		{"Open with a bad option", func() (*redlock.Client, error) {
			return redlock.Open("memory", []string{"a"}, redlock.WithTTL(-1))
		}, "not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.open()
			require.Nil(t, c)
			require.ErrorContains(t, err, tc.wants)
			require.NotErrorIs(t, err, redlock.ErrNotObtained)
		})
	}

	c := newClient(t, three())
	for key, wants := range map[string]string{
		"":                                       "empty key",
		strings.Repeat("k", redlock.MaxKeyLen+1): "longer than 4096",
	} {
		_, err := c.TryLock(t.Context(), key)
		require.ErrorContains(t, err, wants)
		require.NotErrorIs(t, err, redlock.ErrNotObtained)
		_, err = c.Lock(t.Context(), key)
		require.ErrorContains(t, err, wants, "Lock must not retry bad input")
	}
}

// NodeTimeout tells the node timeout a Client's calls get: TTL/10 at most
// MaxNodeTimeout by default, or WithNodeTimeout's.
func TestNodeTimeout(t *testing.T) {
	for _, tc := range []struct {
		opts []redlock.Option
		want time.Duration
	}{
		{nil, redlock.MaxNodeTimeout},
		{[]redlock.Option{redlock.WithTTL(time.Second)}, 100 * time.Millisecond},
		{[]redlock.Option{redlock.WithTTL(time.Minute)}, redlock.MaxNodeTimeout},
		{[]redlock.Option{redlock.WithTTL(time.Second), redlock.WithNodeTimeout(300 * time.Millisecond)}, 300 * time.Millisecond},
		{[]redlock.Option{redlock.WithNodeTimeout(redlock.MinNodeTimeout)}, redlock.MinNodeTimeout},
		// Near the shortest TTL (above its 2ms of drift, with no drift
		// factor): the default stays above MinNodeTimeout, never refused.
		{[]redlock.Option{redlock.WithTTL(2100 * time.Microsecond), redlock.WithDriftFactor(0)}, 210 * time.Microsecond},
	} {
		c := newClient(t, []driver.Node{memory.New()}, tc.opts...)
		assert.Equal(t, tc.want, c.NodeTimeout())
	}
}

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, []driver.Node{memory.New()})
		assert.Equal(t, redlock.DefaultTTL, c.TTL())
		assert.Equal(t, redlock.MaxNodeTimeout, c.NodeTimeout(), "TTL/10, at most MaxNodeTimeout")
		assert.Equal(t, 1, c.Quorum())
		before := time.Now()
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		after := time.Now()
		const want = 10*time.Second - 100*time.Millisecond - 2*time.Millisecond // ttl - (ttl*0.01 + 2ms)
		assert.GreaterOrEqual(t, l.Until().Sub(before), want, "the validity is counted from the start of the attempt")
		assert.LessOrEqual(t, l.Until().Sub(after), want)
	})
}

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestKeyPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, nodes := memNodes(3)
		c := newClient(t, nodes, redlock.WithKeyPrefix("lock:"), redlock.WithFencing())
		l, err := c.TryLock(t.Context(), "orders")
		require.NoError(t, err)
		assert.Equal(t, "orders", l.Key(), "Key is the name the caller gave")
		require.Eventually(t, func() bool { return holders(mem, "lock:orders") == 3 }, 5*time.Second, time.Millisecond)
		assert.Equal(t, 0, holders(mem, "orders"))
		// TryLock returns once the token is written to a quorum; the third
		// node's write may still be on its way, or refused there if it came
		// before that node's SET. mem[0] may be that node.
		fenced := 0
		for _, m := range mem {
			if m.Fence(driver.PrefixFenceKey("lock:", "lock:orders")) == 1 {
				fenced++
			}
			assert.Zero(t, m.Fence(driver.FenceKey("lock:orders")), "no counter outside the prefix")
			assert.Zero(t, m.Fence(driver.FenceKey("orders")), "no counter outside the prefix")
		}
		assert.GreaterOrEqual(t, fenced, 2, "the fencing counter is the prefix's own for the prefixed key, on a quorum")
		require.NoError(t, l.Unlock(t.Context()))

		_, err = c.TryLock(t.Context(), strings.Repeat("k", redlock.MaxKeyLen-len("lock:")+1))
		require.ErrorContains(t, err, "with the prefix")
	})
}

// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		many := make([]driver.Node, redlock.MaxNodes+1)
		for i := range many {
			many[i] = memory.New()
		}
		_, err := redlock.New(many)
		require.ErrorContains(t, err, "more than 64")
		_, err = redlock.New(many[:3], redlock.WithTTL(redlock.MaxTTL+time.Second))
		require.ErrorContains(t, err, "longer than 24h0m0s")
		_, err = redlock.New(many[:3], redlock.WithKeyPrefix(strings.Repeat("p", redlock.MaxKeyLen)))
		require.ErrorContains(t, err, "leaves no room")
		c := newClient(t, many[:3])
		l, err := c.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.ErrorContains(t, l.Extend(t.Context(), redlock.MaxTTL+time.Second), "longer than 24h0m0s")
		require.NoError(t, l.Unlock(t.Context()))
	})
}

// FuzzInput feeds arbitrary options and keys to New and TryLock: the result is
// a lock or a clear error, never a panic, and invalid input never looks like
// contention.
func FuzzInput(f *testing.F) {
	f.Add(int64(10*time.Second), int64(0), 0.01, "k", "")
	f.Add(int64(0), int64(-1), 1.5, "", "lock:")
	f.Add(int64(time.Millisecond), int64(time.Hour), -0.1, "{a}b", "p")
	f.Fuzz(func(t *testing.T, ttl, nodeTimeout int64, driftFactor float64, key, prefix string) {
		opts := []redlock.Option{
			redlock.WithTTL(time.Duration(ttl)),
			redlock.WithDriftFactor(driftFactor),
			redlock.WithKeyPrefix(prefix),
		}
		if nodeTimeout != 0 {
			opts = append(opts, redlock.WithNodeTimeout(time.Duration(nodeTimeout)))
		}
		c, err := redlock.New([]driver.Node{memory.New(), memory.New(), memory.New()}, opts...)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "redlock: ") {
				t.Fatalf("New error %q does not say where it comes from", err)
			}
			return
		}
		defer c.Close()
		l, err := c.TryLock(t.Context(), key)
		if err != nil {
			if errors.Is(err, redlock.ErrNotObtained) && key != "" && len(prefix)+len(key) <= redlock.MaxKeyLen {
				return // a tiny TTL can run out while acquiring
			}
			if errors.Is(err, redlock.ErrNotObtained) {
				t.Fatalf("TryLock(%q) on free nodes: %v; bad input must not look like contention", key, err)
			}
			return
		}
		if l.Key() != key {
			t.Fatalf("Key() = %q, want %q", l.Key(), key)
		}
		l.Unlock(t.Context())
	})
}
