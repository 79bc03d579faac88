package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-redlock/redlock/driver"
	"github.com/go-redlock/redlock/drivers/goredis"
)

// perCallDriver opens nodes that keep no connection between calls: each call
// opens a goredis node of its own and closes it when it returns, as a driver
// that dials for every call would. Such a node keeps the contract ("Close
// releases the node's connections": it has none left once its calls
// returned), so the suite must pass it.
type perCallDriver struct{}

func (perCallDriver) Open(addr string) (driver.Node, error) {
	if _, err := (goredis.Driver{}).Open(addr); err != nil { // the address's check, at Open
		return nil, err
	}
	return &perCallNode{addr: addr, live: map[driver.Node]struct{}{}}, nil
}

// perCallNode is perCallDriver's node.
type perCallNode struct {
	addr   string
	mu     sync.Mutex
	closed bool
	live   map[driver.Node]struct{} // the nodes of the calls in flight
}

// call runs f on a node of its own, closed when f returns or by Close.
func (n *perCallNode) call(f func(driver.Node) (bool, error)) (bool, error) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false, driver.ErrClosed
	}
	inner, err := (goredis.Driver{}).Open(n.addr)
	if err != nil {
		n.mu.Unlock()
		return false, err
	}
	n.live[inner] = struct{}{}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.live, inner)
		n.mu.Unlock()
		inner.Close()
	}()
	return f(inner)
}

func (n *perCallNode) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.call(func(i driver.Node) (bool, error) { return i.SetNX(ctx, key, value, ttl) })
}

func (n *perCallNode) EvalRelease(ctx context.Context, key, value string) (bool, error) {
	return n.call(func(i driver.Node) (bool, error) { return i.EvalRelease(ctx, key, value) })
}

func (n *perCallNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.call(func(i driver.Node) (bool, error) { return i.Extend(ctx, key, value, ttl) })
}

func (n *perCallNode) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for i := range n.live {
		i.Close()
	}
	return nil
}

// TestCloseReleasesConnectionsOfNodeWithoutIdle runs the suite's
// Close/ReleasesConnections on a node that keeps no connection between its
// calls: it has nothing for Close to release, which is no failure.
func TestCloseReleasesConnectionsOfNodeWithoutIdle(t *testing.T) {
	closeReleasesConnections(t, t.Context(), &redisSuite{d: perCallDriver{}, format: Addr.URL})
}
