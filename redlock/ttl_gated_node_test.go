package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redlock/redlock/drivers/memory"
)

// ttlGatedNode is a memory node whose TTL reads the key's time to live only
// once ttlGate is closed, and whose Extend waits for extGate and then
// applies its PEXPIRE or, with failExtend, fails without sending anything
// (a connection reset). With set given, it notes there the value its SET
// wrote.
type ttlGatedNode struct {
	*memory.Node
	ttlGate, extGate <-chan struct{}
	failExtend       bool
	set              *setValue
}

func (n ttlGatedNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if n.set != nil {
		n.set.note(value)
	}
	return n.Node.SetNX(ctx, key, value, ttl)
}

func (n ttlGatedNode) TTL(ctx context.Context, key, value string) (time.Duration, bool, error) {
	<-n.ttlGate
	return n.Node.TTL(ctx, key, value)
}

func (n ttlGatedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	<-n.extGate
	if n.failExtend {
		return false, errors.New("connection reset by peer")
	}
	return n.Node.Extend(ctx, key, value, ttl)
}

// setValue is the value the last SET of ttlGatedNodes that share it wrote.
type setValue struct {
	mu    sync.Mutex
	value string
}

func (s *setValue) note(value string) {
	s.mu.Lock()
	s.value = value
	s.mu.Unlock()
}

func (s *setValue) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value
}

// shortenKeys sets key, as the SET that set noted wrote it, to live d on
// every node of mem (from outside the lock: a server's clock that jumped,
// or another client's PEXPIRE), and returns when the keys now expire.
func shortenKeys(t *testing.T, mem []*memory.Node, key string, set *setValue, d time.Duration) time.Time {
	t.Helper()
	v := set.get()
	expiry := time.Now().Add(d)
	for _, m := range mem {
		ok, err := m.Extend(context.Background(), key, v, d)
		require.NoError(t, err)
		require.True(t, ok)
	}
	return expiry
}
