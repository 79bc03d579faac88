// Package goredis is the Redlock driver for go-redis v9
// (github.com/redis/go-redis/v9): every node is one go-redis client talking to
// one independent Redis master.
//
// Importing the package registers the driver as "goredis" with package
// redlock, which then opens one node per address:
//
//	import _ "github.com/go-redlock/redlock/drivers/goredis"
//
//	c, err := redlock.Open("goredis", []string{
//		"redis://:secret@10.0.0.1:6379/0", "10.0.0.2:6379", "10.0.0.3:6379",
//	})
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
// A node of one server (an address without cluster=true, or [New] over a
// *redis.Client or a *redis.Ring) follows no redirection: a server of a Redis
// Cluster of several shards given so answers MOVED (ASK) for the keys of its
// other nodes' slots, an error that retrying cannot fix, which says so
// (driver.ErrClusterServer, see driver.OneServerError); [New] over a client
// of another type, which may wrap a cluster client, leaves such replies as
// they are.
//
// A node may be a whole Redis Cluster:
// "redis://host:port?cluster=true&addr=host2:port2" (the URL's host and every
// addr are seeds) opens a *redis.ClusterClient, and [New] takes one. Its
// commands follow MOVED and ASK redirections but are never resent after a
// lost reply; after a command fails on the network, the client reloads its
// slot map in the background (at most every 200ms), so that once a failover
// promoted a replica in place of a dead primary the next commands reach it;
// concurrent commands are pipelined shard by shard, each shard's queue and
// connections bounded as a single server's are (below), so that a shard
// whose primary hangs holds up the calls on its own keys alone, however
// many of them wait, and the other shards' keys are locked meanwhile (as
// long as the servers serve them: under Redis' default
// cluster-require-full-coverage, not once the cluster marked the shard
// failed, see the README), also on the node's first use: until the client has its slot map, a call first
// has it read (CLUSTER SLOTS, which go-redis asks of the seeds one after
// the other, in random order), two calls at a time, each read bounded by
// its call's context and network timeout, while the other calls wait for
// the map as long as their contexts allow, counted in Pending as queued
// calls are. A read that asks a hung seed first fails its call, unsent:
// go-redis asks the seeds under the call's one context, and a seed that
// accepts the connection but never answers takes all of it (no option of
// go-redis bounds each seed's read, and its order is random); that failure
// has the client reload the map in the background, without the call's
// deadline, each seed bounded by the client's ReadTimeout (3s on a node of
// Open; a client of New's with ReadTimeout -1 never gets past the hung seed, and
// its calls read on), so that the reload goes on to the other seeds and no call reads
// the map once it has it (until then a call's read asks the hung seed first
// with odds of one in the number of seeds). A node of Open's whose address
// gives several seeds first asks each of them, at once, for CLUSTER SLOTS,
// on a connection of its own, before the map is read: if two seeds that
// answer name no node ID in common (nodes of two clusters, of which go-redis
// would lock on the one whose seed it happened to ask), every call on the
// node fails with an error that names the two and matches
// driver.ErrSeedsOfTwoClusters, which retrying cannot fix. A seed that does
// not answer within 5s is skipped (a hung seed thus fails the first calls
// for up to 5s), and the client connects to it later only once it answered
// and agrees. A node of New over a *redis.ClusterClient of the caller's
// asks its seeds (ClusterOptions.Addrs, with its dialer, credentials and
// TLS) the same way before its first call (or Identity, or Subscribe)
// reads the map, and is refused likewise. If a seed was skipped then (not answering, or
// knowing no slot), New's node adds a dial hook to each node client the
// cluster client makes from then on (ClusterClient.OnNewNode), which asks
// the seed before go-redis connects to it; the hook does nothing once every
// seed agreed or the node is closed. One such function is added to a
// cluster client however many nodes are made over it (a node per request,
// say): it hooks every node client made from then on, and the hook asks the
// gates of the nodes that are live at each dial, so that a node client made
// while no node had a gate (by go-redis' background reload after a
// request's node closed) is gated by a later node's gate. A node client made
// before the first gate over the cluster client (the caller used it before
// the first node's first call) is not gated.
// Release notifications use sharded pub/sub, a connection per shard,
// following a channel whose slot moves, or whose shard's primary a failover
// replaced; a shard whose connection breaks is reconnected without waiting
// for a Subscribe. A pub/sub connection on which nothing came for 3s is sent
// a PING, and taken as broken when nothing comes within 5s after it: a hung
// primary keeps its connections open, and a failover promotes its replica.
//
// [Driver.Open] builds and owns a *redis.Client configured for Redlock: each
// command is bounded by its context's deadline (ContextTimeoutEnabled), go-redis
// never retries a command (the algorithm treats a failed command as one whose
// outcome is unknown and releases everywhere), and the pool holds enough
// connections for dozens of concurrent lockers. Open does not connect: the node
// dials on first use and again after failures, so Open neither fails nor blocks
// because a server is down. A new connection's handshake is one round trip
// (HELLO; no CLIENT SETINFO, no maintenance notifications), and it is made in
// the background, bounded by the dial timeout (5s) rather than by the node
// timeout of the call that needed it: a call that finds no idle connection
// waits for it as long as its context allows (until its network deadline or its
// caller's cancellation), and one is made after a call that took the last,
// once its command is done, if the pool has none idle then (made meanwhile,
// by a PING through the pool, it could take that very connection before the
// call's command did, which then dialed), so that over a slow link a node
// timeout of twice the round trip is enough for every call but the first on
// a fresh node. redlock.Client.Connect makes that first call's connections
// beforehand: after its identity question, the node (of Open's, on one
// server) leaves two connections made and idle in its pool, the one its
// first call takes and the spare kept beside it, so that neither the first
// acquisition nor a call made while it is on its connection dials within its
// node timeout (the spare would otherwise be made once that first call is
// done). A node of New's, or of a cluster, is not warmed.
//
// [New] wraps a client the caller configured instead, for Sentinel, custom
// dialers, hooks or instrumentation:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "10.0.0.1:6379",
//		ContextTimeoutEnabled: true, // let the context's deadline bound each command
//		MaxRetries:            -1,   // never resend a command whose reply was lost
//	})
//	node := goredis.New(rdb)
//
// Set ContextTimeoutEnabled on such a client: it lets each command's context
// deadline, normally the Redlock node timeout, bound the command's network I/O.
// Without it go-redis bounds a command only by its ReadTimeout and
// WriteTimeout; the node then watches every context itself, at the cost of a
// goroutine per call, and an abandoned command keeps a pooled connection busy
// until those timeouts. Also set MaxRetries to -1: a SET NX resent after a lost
// reply finds the caller's own key and reports "not set", hiding that the first
// attempt was applied. Leave ReadOnly (and RouteByLatency, RouteRandomly)
// unset on a *redis.ClusterClient: such a client holds its commands for
// COMMAND beyond their contexts, and the node then watches every call, as
// without ContextTimeoutEnabled (see New); so it does on a client whose
// ReadTimeout is -2, which sets no read deadline, not even the context's. The caller keeps ownership of a
// client passed to New: closing the node does not close it. A node of New is
// named (in errors, logs and the redlock.node attribute of metrics) by what
// its client connects to, without credentials: a Ring by its shards'
// addresses, "ring(host:port,...)"; a client of the caller's own type, whose
// servers cannot be learned, is numbered ("goredis-N") unless [NewNamed]
// names it.
//
// Concurrent calls on a node are pipelined (package internal/batch): a node
// sends on at most two connections at once, a cluster node two per shard (to a far server, two per
// millisecond of its fastest reply once 8 round trips one after the other
// were timed, from 2 ms up, at most 16, so that it is not held to two batches
// per round trip); while they are busy, the calls that arrive wait and go together as one pipeline (at most 128 commands),
// one write and one read for all of them, on the client and on the server
// (bench/RESULTS.md measures what that gains). A call that finds a
// connection free is sent at once, alone, with its own context; on a node
// from Open, one whose network timeout is within 245ms runs with a deadline
// that calls within the same 5ms share, rounded up to it (never past its own
// context's deadline), which saves a context and a timer per call, and its
// caller's cancellation is seen by that deadline at the latest, as below.
// Such a lone call also goes out on the node's lane when it is free: one
// connection the node keeps out of the pool (a *redis.Conn), used by one
// call at a time, which skips the pool's lock and its health check (a
// system call) on every command. A call that fails (a timeout, a broken
// connection, an error reply) closes the lane, whose connection may hold its
// late reply or be one go-redis marked bad, and the next lone call takes
// another connection from the pool; a lane unused for a second goes back to the pool, so that a
// connection the server closed meanwhile is found by the pool's check
// rather than by a call. A call that a connection the server closed within
// that second (a restart, CLIENT KILL) fails before any reply goes again,
// once, within its context, through the pool, which finds the closed
// connections by its check: a SET NX as driver.SetNXAgainScript, which
// counts as set a key that already holds the call's value (its first send
// may have set it), the scripts as they are. A call in a pipeline still returns as soon as its own
// context ends; a call still waiting when its context ends is never sent.
//
// A call returns when its context's deadline passes, with an error matching
// context.DeadlineExceeded. A context that is canceled before its deadline is
// seen by the deadline at the latest; a cancelable context without a deadline
// is watched, and the call returns as soon as it is canceled.
//
// Nodes also keep fencing counters (driver.Fencer, for redlock.WithFencing)
// and publish their releases (driver.Notifier): a waiter in redlock's Lock
// subscribes to the key's releases and retries as soon as the holder unlocks.
// All the subscriptions of a node share one *redis.PubSub, a connection made
// on the first Subscribe and closed by the node's Close. If the
// connection breaks, the node makes a new one itself (50ms later, then at
// doubling intervals up to 1s while it cannot connect, or while its new
// connections break before the server confirms a subscription on them), or
// the next Subscribe does at once; the new one also subscribes the earlier subscriptions again,
// and until then their waiters poll. A node
// over a client other than a *redis.Client (a Ring, whose pub/sub may reach
// another server than the one that publishes) publishes releases but refuses
// subscriptions, and its waiters poll.
//
// Point every node at an independent master, never at a primary and its
// replicas: asynchronous replication loses locks on failover.
package goredis
