package redlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redlock/redlock/driver"
)

// identityRetry is how often the Client asks again the nodes that have not
// told their identity yet (they were down, say).
const identityRetry = time.Second

// identities finds, at first use, nodes that are one server or one cluster
// under different addresses (driver.Identifier): New cannot, since it must
// not reach the network.
type identities struct {
	done atomic.Bool // every Identifier answered (or a duplicate was found)

	mu   sync.Mutex
	ids  [][]string // by node
	told []bool     // by node: it answered
	last time.Time  // of the last round of questions
	err  error      // the duplicate found, for every later TryLock
}

// checkIdentities returns an error if two nodes reach the same server. It
// asks the nodes that have not answered yet, at most once per identityRetry,
// each bounded by the node timeout; a node that does not answer is asked
// again later and does not fail the call.
func (c *Client) checkIdentities(ctx context.Context) error {
	id := &c.identities
	if id.done.Load() {
		return id.err // set before done, never changed after
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.done.Load() || time.Since(id.last) < identityRetry {
		return id.err
	}
	id.last = time.Now()
	if id.ids == nil {
		id.ids, id.told = make([][]string, len(c.nodes)), make([]bool, len(c.nodes))
	}
	var wg sync.WaitGroup
	pending := 0
	for i, n := range c.nodes {
		ider, ok := n.(driver.Identifier)
		if !ok || id.told[i] {
			continue
		}
		pending++
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, c.nodeTimeout)
			defer cancel()
			if ids, err := ider.Identity(ctx); err == nil {
				id.ids[i], id.told[i] = ids, true
			}
		})
	}
	wg.Wait()
	answered := 0
	for i, a := range id.ids {
		if !id.told[i] {
			continue
		}
		answered++
		for j, b := range id.ids[:i] {
			for _, s := range a {
				if slices.Contains(b, s) {
					id.err = fmt.Errorf("redlock: nodes %d (%s) and %d (%s) reach the same server (%s): a node must be given once, or it counts twice towards the quorum", j+1, c.names[j], i+1, c.names[i], s)
					id.done.Store(true)
					return id.err
				}
			}
		}
	}
	if pending == 0 || answered == countIdentifiers(c.nodes) {
		id.done.Store(true)
	}
	return nil
}

func countIdentifiers(nodes []driver.Node) int {
	n := 0
	for _, node := range nodes {
		if _, ok := node.(driver.Identifier); ok {
			n++
		}
	}
	return n
}
