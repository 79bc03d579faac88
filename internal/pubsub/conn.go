package pubsub

import "context"

// Conn is one pub/sub connection to a Redis server, which a driver makes for
// a [Hub] over its client.
//
// The hub calls Subscribe and Unsubscribe from one goroutine and Receive from
// another, concurrently, and Close from any goroutine at any time: Close must
// make a Receive, Subscribe or Unsubscribe in progress return.
//
// The server's MOVED reply to a SSUBSCRIBE (its text "MOVED <slot>
// <host:port>") may come back from Subscribe (a client that waits for the
// reply) or from Receive (one that does not): either way the hub takes it as
// the refusal of that slot's channels, not as a broken connection, and goes
// on using the connection (see [Hub]).
type Conn interface {
	// Subscribe sends SSUBSCRIBE for the channels (all in one hash slot on a
	// Redis Cluster). It need not wait for the
	// server's confirmations, which Receive returns.
	Subscribe(ctx context.Context, channels ...string) error

	// Unsubscribe sends SUNSUBSCRIBE for the channels. It need not wait for
	// the server's confirmations, which Receive returns.
	Unsubscribe(ctx context.Context, channels ...string) error

	// Receive returns the next event the server sent, in the order sent. It
	// returns an error once the connection is broken or closed, after which
	// the hub drops the connection; or a MOVED reply (see above), after
	// which the hub calls Receive again. A server that stops answering (a
	// hung process, a network that drops its packets) leaves the connection
	// open: Receive should find that out and fail too, within seconds, since
	// a Router moves the subscriptions of a shard whose hung primary a
	// failover replaced only once its connection failed. The goredis
	// driver's sends a PING on a connection idle for a while, and the
	// rueidis and valkey-go clients PING their connections themselves; the
	// redigo driver's (single servers only, no Router) leaves it to TCP
	// keep-alive, minutes, while its waiters poll.
	Receive(ctx context.Context) (Event, error)

	// Close closes the connection. The hub calls it once.
	Close() error
}

// Dialer makes a new connection to the server, ready for Subscribe, or
// returns an error. ctx is canceled when the hub is closed; a Dialer that
// cannot be interrupted delays Close until it returns.
type Dialer func(ctx context.Context) (Conn, error)

// Kind is the kind of an [Event].
type Kind int

// The kinds of events.
const (
	// Ignored is any reply the hub does not use, such as a pong.
	Ignored Kind = iota
	// Message is a message published on Event.Channel.
	Message
	// Subscribed confirms a SSUBSCRIBE of Event.Channel.
	Subscribed
	// Unsubscribed confirms an SUNSUBSCRIBE of Event.Channel.
	Unsubscribed
)

// Event is what the server sent on a pub/sub connection. The message's
// payload is not kept: a release notification carries none.
type Event struct {
	Kind    Kind
	Channel string
}

// KindOf returns the Kind of a pub/sub push of the given kind, as the server
// names it: "smessage", "ssubscribe" and "sunsubscribe" (sharded pub/sub,
// which the release notifications use), or their unsharded forms.
func KindOf(kind string) Kind {
	switch kind {
	case "smessage", "message":
		return Message
	case "ssubscribe", "subscribe":
		return Subscribed
	case "sunsubscribe", "unsubscribe":
		return Unsubscribed
	}
	return Ignored
}
