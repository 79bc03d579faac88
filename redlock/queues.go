package redlock

import "github.com/go-redlock/redlock/driver"

// NodeQueue is one node's local queue of commands (see Client.Queues).
type NodeQueue struct {
	// Node names the node as NodeError does: its address, without
	// credentials.
	Node string
	// Depth is how many commands wait to be sent; Oldest how long the
	// oldest of them has waited (0 when none waits).
	driver.Pending
}

// Queues reports the local queues of the Client's nodes that hold commands
// while their connections are busy (driver.Queuer: the nodes of every Redis
// driver of this module), in the order of the nodes; the other nodes are left
// out. A queue that stays deep, or whose oldest command has waited long, is a
// node, or a Client, that cannot keep up with its load; extensions of held
// locks go first in it. redlockotel reports the queues as the gauges
// redlock.node.pending and redlock.node.pending.wait. Queues may be called at
// any time, also after Close.
func (c *Client) Queues() []NodeQueue {
	if c.unmade() {
		return nil
	}
	var qs []NodeQueue
	for i, n := range c.nodes {
		if q, ok := n.(driver.Queuer); ok {
			qs = append(qs, NodeQueue{Node: c.names[i], Pending: q.Pending()})
		}
	}
	return qs
}

// A ClientObserver is an Observer that also watches the Client it is given
// to (WithObserver) for what no event reports, such as the nodes' queues
// (Client.Queues): New calls ObserveClient with the Client once it is made,
// and Close calls the stop function it returned, if not nil, before it
// closes the nodes. A stop that panics does not leave the Client half closed:
// Close still stops the other observers and closes the Client, then the
// panic goes on to Close's caller; an ObserveClient that panics in New has
// the observers given the Client before it stopped, and the panic goes on to
// New's caller. redlockotel's Observer is one, for its gauges.
type ClientObserver interface {
	Observer
	// ObserveClient is called by New (and Open) with the Client once it is
	// made; Close calls stop, unless nil, before it closes the nodes.
	ObserveClient(c *Client) (stop func())
}

// observeClient gives c to those of its observers that watch their Client,
// and keeps their stop functions for Close. When one of them panics (or
// calls runtime.Goexit), no Client is returned to be closed: the observers
// given c before it are stopped, and the panic goes on.
func (c *Client) observeClient(obs []Observer) {
	given := false
	defer func() {
		if !given {
			stopObservers(c.obsStops)
		}
	}()
	for _, o := range obs {
		if co, ok := o.(ClientObserver); ok {
			if stop := co.ObserveClient(c); stop != nil {
				c.obsStops = append(c.obsStops, stop)
			}
		}
	}
	given = true
}
