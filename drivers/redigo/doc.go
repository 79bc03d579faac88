// Package redigo is a Redlock driver over the redigo Redis client
// (github.com/gomodule/redigo).
//
// Importing it registers the driver as "redigo" for redlock.Open:
//
//	import _ "github.com/go-redlock/redlock/drivers/redigo"
//
//	c, err := redlock.Open("redigo", []string{"10.0.0.1:6379", "redis://:secret@10.0.0.2:6379/0", ...})
//
// [Driver.Open] accepts "host:port" and "redis://[user:password@]host:port[/db]"
// and builds a connection pool of its own, which the node closes. [New] wraps a
// *redis.Pool the caller configured, which the caller keeps and closes.
//
// Every call takes a connection from the pool and is bounded by its context: when
// the context ends, the call returns an error matching ctx.Err() and the
// connection, whose reply may still be on its way, is closed rather than reused.
//
// Nodes also keep fencing counters (driver.Fencer, for redlock.WithFencing)
// and publish their releases (driver.Notifier): a waiter in redlock's Lock
// subscribes to the key's releases and retries as soon as the holder unlocks.
// All the subscriptions of a node share one pub/sub connection of the node's
// own, dialed with the pool's DialContext (or Dial) on the first Subscribe,
// never put in the pool, and closed by the node's Close. If the
// connection breaks, the next Subscribe makes a new one, which also subscribes
// the earlier subscriptions again; until then their waiters poll.
package redigo
