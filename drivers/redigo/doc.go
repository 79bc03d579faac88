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
package redigo
