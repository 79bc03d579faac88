package driver

import (
	"context"
	"time"
)

// Queuer is implemented by nodes that hold commands in a local queue while
// their connections are busy, and send them later, together, as a pipeline.
// For such a node, package redlock gives each command the node timeout with
// WithNetworkTimeout instead of as a deadline of ctx: the node must then
// bound the command's time on the network (from the moment it leaves the
// queue) by that timeout, and its wait in the queue by ctx alone, so that a
// client under load queues rather than timing out. A node that receives no
// network timeout (ctx carries none) bounds the whole call by ctx, as every
// Node does.
//
// A Queuer should also fail the commands queued behind a batch that timed out
// on the network once the server has answered nothing for more than twice
// the network timeout since it was asked: they would wait behind a server
// that does not answer. One timeout alone, such as that of a server's first
// command (its connection made late), or its first after a quiet spell, does
// not show that: the commands queued behind it are sent.
type Queuer interface {
	// Pending reports the node's local queue now.
	Pending() Pending
}

// Pending describes a node's local queue of commands (see Queuer).
type Pending struct {
	// Depth is how many commands wait to be sent.
	Depth int
	// Oldest is how long the oldest of them has waited; 0 when none waits.
	Oldest time.Duration
}

type networkTimeoutKey struct{}

type urgentKey struct{}

// WithNetworkTimeout returns ctx carrying d, the longest a command sent with
// it may take on the network once a Queuer sends it (see Queuer).
func WithNetworkTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, networkTimeoutKey{}, d)
}

// NetworkTimeout returns the network timeout that ctx carries, if any (see
// WithNetworkTimeout).
func NetworkTimeout(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(networkTimeoutKey{}).(time.Duration)
	return d, ok && d > 0
}

// WithUrgent returns ctx marking its commands as urgent: a Queuer sends them
// before the commands that are not, as package redlock marks the extensions
// of held locks, which go before new acquisitions when a node is saturated.
func WithUrgent(ctx context.Context) context.Context {
	return context.WithValue(ctx, urgentKey{}, true)
}

// Urgent reports whether ctx marks its commands as urgent (see WithUrgent).
func Urgent(ctx context.Context) bool {
	u, _ := ctx.Value(urgentKey{}).(bool)
	return u
}
