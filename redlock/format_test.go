package redlock_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
	"github.com/go-redlock/redlock/redlock"
)

// valueRecorder is a node that records the lock values sent through it: a
// Lock never shows its own.
type valueRecorder struct {
	driver.Node
	mu     *sync.Mutex
	values *[]string
}

func (r valueRecorder) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	r.mu.Lock()
	*r.values = append(*r.values, value)
	r.mu.Unlock()
	return r.Node.SetNX(ctx, key, value, ttl)
}

// Printing a Client or a Lock, with any verb, shows neither the lock's value
// nor the nodes' fields; String names the key, the token and the nodes.
// In a bubble (testing/synctest): on the real clock, a machine that stalls
// the test past the default 200ms node timeout fails the acquisition (or the
// release) the test needs.
func TestFormatHidesValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			values []string
		)
		nodes := make([]driver.Node, 3)
		for i := range nodes {
			nodes[i] = valueRecorder{Node: memory.New(), mu: &mu, values: &values}
		}
		c, err := redlock.New(nodes, redlock.WithKeyPrefix("lock:"))
		require.NoError(t, err)
		defer c.Close()
		l, err := c.TryLock(t.Context(), "invoice:42")
		require.NoError(t, err)
		mu.Lock()
		seen := append([]string(nil), values...) // the same value, sent to a quorum at least
		mu.Unlock()
		require.NotEmpty(t, seen)

		require.Regexp(t, `^redlock\.Lock\{key: "invoice:42", until: \d\d:\d\d:\d\d\.\d\d\d\}$`, l.String())
		require.Regexp(t, `^redlock\.Client\{nodes: \[#1 #2 #3\], quorum: 2, ttl: 10s\}$`, c.String())
		wrapped := struct {
			L *redlock.Lock
			C *redlock.Client
		}{l, c}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T", "%p"} {
			for _, v := range []any{l, c, wrapped, []*redlock.Lock{l}, map[string]*redlock.Lock{"k": l}} {
				out := fmt.Sprintf(verb, v)
				for _, value := range seen {
					if strings.Contains(out, value) || strings.Contains(strings.ToLower(out), hex.EncodeToString([]byte(value))) {
						t.Errorf("Sprintf(%q, %T) shows the lock value: %s", verb, v, out)
					}
				}
			}
		}

		f, err := redlock.New([]driver.Node{memory.New()}, redlock.WithFencing())
		require.NoError(t, err)
		defer f.Close()
		fl, err := f.TryLock(t.Context(), "k")
		require.NoError(t, err)
		require.Contains(t, fl.String(), "token: 1,")

		var nilLock *redlock.Lock
		var nilClient *redlock.Client
		require.Equal(t, "redlock.Lock(nil) redlock.Client(nil)", fmt.Sprint(nilLock, " ", nilClient))
	})
}
