package redlock

import (
	"context"
	"errors"
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

	mu     sync.Mutex    // guards what follows; never held during a node call
	ids    [][]string    // by node
	told   []bool        // by node: it answered
	last   time.Time     // of the last round of questions
	asking bool          // a round of questions is in flight
	first  chan struct{} // closed when the first round ended; nil before it began
	err    error         // the duplicate found, for every later TryLock
}

// checkIdentities returns an error if two nodes reach the same server. The
// first call asks every node (driver.Identifier) and every call waits, as
// long as ctx lets it, for that first round, each question bounded by the
// node timeout. The nodes that have not answered (they were down, say) are
// asked again at most once per identityRetry, in the background: a node that
// does not answer never holds up a call after the first round.
func (c *Client) checkIdentities(ctx context.Context) error {
	id := &c.identities
	if id.done.Load() {
		return id.err // set before done, never changed after
	}
	id.mu.Lock()
	if id.first == nil {
		id.first = make(chan struct{})
		id.ids, id.told = make([][]string, len(c.nodes)), make([]bool, len(c.nodes))
		c.askIdentities()
	} else if !id.asking && time.Since(id.last) >= identityRetry {
		c.askIdentities()
	}
	first := id.first
	id.mu.Unlock()
	select {
	case <-first:
	case <-ctx.Done():
		return errors.Join(ErrNotObtained, ctx.Err())
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.err
}

// askIdentities starts a round of questions to the nodes that have not told
// their identity, in the background (Close waits for it). id.mu is held.
func (c *Client) askIdentities() {
	id := &c.identities
	id.asking, id.last = true, time.Now()
	type answer struct {
		node int
		ids  []string
	}
	var ask []int
	for i, n := range c.nodes {
		if _, ok := n.(driver.Identifier); ok && !id.told[i] {
			ask = append(ask, i)
		}
	}
	c.background(func() {
		answers := make(chan answer, len(ask))
		var wg sync.WaitGroup
		for _, i := range ask {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(c.quit, c.nodeTimeout)
				defer cancel()
				if ids, err := c.nodes[i].(driver.Identifier).Identity(ctx); err == nil {
					answers <- answer{i, ids}
				}
			})
		}
		wg.Wait()
		close(answers)
		id.mu.Lock()
		defer id.mu.Unlock()
		for a := range answers {
			id.ids[a.node], id.told[a.node] = a.ids, true
		}
		id.asking = false
		select {
		case <-id.first:
		default:
			defer close(id.first) // after err is set
		}
		if err := c.duplicateIdentity(); err != nil {
			id.err = err
			id.done.Store(true)
			return
		}
		answered := 0
		for _, t := range id.told {
			if t {
				answered++
			}
		}
		if len(ask) == 0 || answered == countIdentifiers(c.nodes) {
			id.done.Store(true)
		}
	})
}

// duplicateIdentity returns an error naming two nodes that answered one ID.
// id.mu is held.
func (c *Client) duplicateIdentity() error {
	id := &c.identities
	for i, a := range id.ids {
		if !id.told[i] {
			continue
		}
		for j, b := range id.ids[:i] {
			if !id.told[j] {
				continue
			}
			for _, s := range a {
				if slices.Contains(b, s) {
					return fmt.Errorf("redlock: nodes %d (%s) and %d (%s) reach the same server (%s): a node must be given once, or it counts twice towards the quorum", j+1, c.names[j], i+1, c.names[i], s)
				}
			}
		}
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
