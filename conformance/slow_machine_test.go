package conformance_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/conformance"
	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

// lateFence is a correct memory node on a machine so slow that a RaiseFence
// of a counter beyond an int64 (Fencer/CounterOutlivesKey's) reaches it only
// once the key, set with a TTL under 5s, has expired.
type lateFence struct {
	*memory.Node
	mu   sync.Mutex
	ttls map[string]time.Duration // by key: the TTL of its last SetNXFence
}

func (n *lateFence) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	n.mu.Lock()
	n.ttls[key] = ttl
	n.mu.Unlock()
	return n.Node.SetNXFence(ctx, key, value, ttl, fenceKey)
}

func (n *lateFence) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	n.mu.Lock()
	ttl := n.ttls[key]
	n.mu.Unlock()
	if token > math.MaxInt64 && ttl < 5*time.Second {
		time.Sleep(ttl + 20*time.Millisecond) // the key expired meanwhile
	}
	return n.Node.RaiseFence(ctx, key, value, fenceKey, token)
}

// Fencer/CounterOutlivesKey tries again with TTLs four times longer when
// its RaiseFence came late and found the key gone: the longest TTL it tries
// must still be one whose expiry it waits for. A right driver on a machine
// that made the first three tries (100ms, 400ms, 1.6s) late must pass with
// the fourth (6.4s); before, the suite then waited 5s for a key kept 6.4s
// and failed it with "the key was still held 5s later".
func TestCounterOutlivesKeyOnSlowMachine(t *testing.T) {
	t.Parallel()
	conformance.Run(t, func(t *testing.T) driver.Node {
		return &lateFence{Node: memory.New(), ttls: map[string]time.Duration{}}
	})
}
