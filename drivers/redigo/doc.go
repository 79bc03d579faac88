// Package redigo is a Redlock driver over the redigo Redis client
// (github.com/gomodule/redigo).
//
// Importing it registers the driver as "redigo" for redlock.Open:
//
//	import _ "github.com/go-redlock/redlock/drivers/redigo"
//
//	c, err := redlock.Open("redigo", []string{"10.0.0.1:6379", "redis://:secret@10.0.0.2:6379/0", ...})
//
// [Driver.Open] builds a connection pool of its own, which the node closes.
// [New] wraps a *redis.Pool the caller configured, which the caller keeps and
// closes. Such a node is named (in errors, logs and the redlock.node attribute
// of metrics) by the pool's address in memory, "redigo(0x...)", since the
// server is known only to the pool's Dial: name it by its server with
// [NewNamed], so that a program that makes pools again keeps one name, and one
// metric series, per server. Give such a pool a Dial with timeouts
// (redis.DialConnectTimeout, DialReadTimeout, DialWriteTimeout), or a
// DialContext, which gets the call's context: redigo's documentation shows
// Dial without them, and a Dial that waits for a server that never answers
// (blackholed, stopped) holds a goroutine and one of the pool's connections
// for ever. A call still returns by its context's end, and the node's Close
// by a second after it began (see [New]).
//
// Addresses are "host:port", "redis://[user:password@]host:port[/db]" or the
// same with "rediss://" for TLS; the query parameters tls_ca_file,
// tls_cert_file, tls_key_file and tls_server_name of a rediss:// address name
// the CA bundle to trust, a client certificate and its key (mutual TLS), and
// the name to verify the server's certificate against.
// [Driver.OpenConfig], which redlock.Open calls for redlock.WithTLSConfig,
// connects with a tls.Config of the caller's for addresses in any form. The
// TLS handshake is bounded by the call's context, and a node's pub/sub
// connection uses TLS too.
//
// Concurrent calls on a node are pipelined (package internal/batch): a node
// sends on at most two connections from the pool at once (to a far server,
// two per millisecond of its fastest reply once 8 round trips one after the
// other were timed, from 2 ms up, at most 16, so that it is not held to two
// batches per round trip); while they are busy, the calls that arrive wait and go together as one pipeline (Send for
// each, one Flush, then their replies; at most 128 commands), one write and
// one read for all of them, on the client and on the server
// (bench/RESULTS.md measures what that gains). A call that finds a
// connection free is sent at once, alone; on a node from Open, one whose
// network timeout is within 245ms runs with a deadline that calls within the
// same 5ms share, rounded up to it (never past its own context's deadline),
// which saves a context and a timer per call: a cancellation of such a call
// is seen by that deadline at the latest, also while it waits for a
// connection of the pool or its dial (a call canceled before it got a
// connection is not sent).
//
// Every call is bounded by its context: when the context ends, the call
// returns an error matching ctx.Err() (a call still waiting to be sent is
// never sent), and a connection whose reply may still be on its way is closed
// rather than reused. A pipeline's replies are read with the latest deadline
// of its calls; a pipeline whose calls have no deadline waits as long as the
// connection's own read timeout (3s for Open's pools), and each of its
// callers still returns as soon as its own context ends. A pipeline whose
// deadline passed while it was written reads the replies already there and
// breaks the connection at the first that is not. Open's pools bound every
// write by 500ms: a command of the library is small enough for the kernel to
// take at once, so a write waits only when the server stopped reading long
// ago, and the connection is then broken. Nothing a call starts outlives its
// deadline by more than that.
// The pool of a node from Open holds at most max(64, 10×GOMAXPROCS) connections,
// as go-redis's does, so that a flood of calls cut short by their contexts
// cannot open connections without limit; a call waits for a free one as long as
// its context allows. redlock.Client.Connect's identity question leaves one
// connection idle in it, which the first acquisition's one command to the node
// takes (the pool's idle list is last in, first out, and nothing of the node's
// takes a connection beside the call's), so that the node has no warm-up of
// its own; an acquisition that overlaps an earlier call on the node (the
// release an Unlock leaves in flight) may dial a second.
//
// A pool of Open's hands out a connection unused for a second or more only
// once it has checked, without a round trip, that the server has not closed
// it. When the server closes the connections while they are idle (a
// restart, CLIENT KILL, the server's timeout) and a call fails on one that had answered before
// (EOF, a reset, a broken pipe; not a timeout, not an error reply), and
// before any reply to it came, the node sends the call again at once, once,
// within its context, on a connection so checked or a new one; and the pool
// checks every connection put back before that failure when it hands it
// out. The scripts (release, extend, TTL, fencing) go again as they are,
// since they compare the lock's value first, and a SET NX as
// driver.SetNXAgainScript, which also counts as set a key that already holds
// the call's value: a plain SET NX repeated after a first that the server
// ran would be refused, which the library reads as a key never set. A
// repeated release that deletes nothing counts as the failed first send (its
// outcome unknown). A server that stays down fails the repeat at its dial. A
// pool of the caller's
// (New) is not checked nor repeated on: its TestOnBorrow decides.
//
// Nodes also keep fencing counters (driver.Fencer, for redlock.WithFencing)
// and publish their releases (driver.Notifier): a waiter in redlock's Lock
// subscribes to the key's releases and retries as soon as the holder unlocks.
// All the subscriptions of a node share one pub/sub connection of the node's
// own, dialed with the pool's DialContext (or Dial) on the first Subscribe,
// never put in the pool, and closed by the node's Close. If the
// connection breaks, the node makes a new one itself (50ms later, then at
// doubling intervals up to 1s while it cannot connect, or while its new
// connections break before the server confirms a subscription on them), or
// the next Subscribe does at once; the new one also subscribes the earlier subscriptions again,
// and until then their waiters poll.
//
// A node is one server, which follows no redirection: a server of a Redis
// Cluster of several shards answers MOVED (ASK) for the keys of its other
// nodes' slots, an error that retrying cannot fix, which says so
// (driver.ErrClusterServer, see driver.OneServerError); open such a cluster
// as one node (cluster=true) with the goredis, rueidis or valkeygo driver.
package redigo
