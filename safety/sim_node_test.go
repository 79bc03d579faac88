package safety_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/memory"
)

// simNode is one client's connection to a shared memory node: every client
// of a schedule has its own, as it would have its own connections to a Redis
// server, so that one Client's Close ends its own calls and not the node. The
// memory nodes are made with memory.New rather than opened by address, so
// that a schedule's nodes are garbage once it ends.
type simNode struct {
	m      *memory.Node
	closed atomic.Bool
}

var (
	_ driver.Node     = (*simNode)(nil)
	_ driver.Fencer   = (*simNode)(nil)
	_ driver.Notifier = (*simNode)(nil)
)

func (n *simNode) String() string { return n.m.String() }

// nodeCalls counts the calls the simulated clients made to nodes, over all
// schedules: the measure of a schedule's cost.
var nodeCalls atomic.Int64

func (n *simNode) check() error {
	nodeCalls.Add(1)
	if n.closed.Load() {
		return driver.ErrClosed
	}
	return nil
}

func (n *simNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.check(); err != nil {
		return false, err
	}
	return n.m.SetNX(ctx, key, value, ttl)
}

func (n *simNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	if err := n.check(); err != nil {
		return false, err
	}
	return n.m.EvalRelease(ctx, key, value)
}

func (n *simNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if err := n.check(); err != nil {
		return false, err
	}
	return n.m.Extend(ctx, key, value, ttl)
}

func (n *simNode) SetNXFence(ctx context.Context, key, value string, ttl time.Duration, fenceKey string) (bool, uint64, error) {
	if err := n.check(); err != nil {
		return false, 0, err
	}
	return n.m.SetNXFence(ctx, key, value, ttl, fenceKey)
}

func (n *simNode) RaiseFence(ctx context.Context, key, value, fenceKey string, token uint64) (bool, error) {
	if err := n.check(); err != nil {
		return false, err
	}
	return n.m.RaiseFence(ctx, key, value, fenceKey, token)
}

func (n *simNode) ReleaseNotify(ctx context.Context, key, value string) (bool, error) {
	if err := n.check(); err != nil {
		return false, err
	}
	return n.m.ReleaseNotify(ctx, key, value)
}

func (n *simNode) Subscribe(ctx context.Context, key string, notify chan<- struct{}) (func(), error) {
	if err := n.check(); err != nil {
		return nil, err
	}
	return n.m.Subscribe(ctx, key, notify)
}

// Close closes this client's connection only.
func (n *simNode) Close() error {
	n.closed.Store(true)
	return nil
}
