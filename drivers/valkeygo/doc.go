// Package valkeygo is the Redlock driver for the valkey-go client
// (github.com/valkey-io/valkey-go), the client of Valkey, which also speaks
// to Redis.
//
// It registers itself as "valkeygo", so that a blank import is enough to open
// a lock client over addresses:
//
//	import _ "github.com/go-redlock/redlock/drivers/valkeygo"
//
//	c, err := redlock.Open("valkeygo", []string{"10.0.0.1:6379", "redis://:secret@10.0.0.2:6379/0", ...})
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
// valkey-go is a fork of rueidis, and this driver shares all its logic with
// the rueidis driver (github.com/go-redlock/redlock/drivers/rueidis): it
// behaves the same way, down to the probe of a server that did not answer a
// call by its deadline. A node opened by address creates its valkey-go client
// in the background on first use, not in Open: Open neither fails nor blocks
// because a server is down or stalled, and a call waits for the connection no
// longer than its context allows. A failed attempt is retried by the next
// call, and a client that lost its connection is replaced by a new one in the
// same way, so that no call ever waits for a connection beyond its context.
// The client is a plain single-node client (ForceSingleClient) over one
// pipelined connection, without client-side caching, and never retries a command on its own: a
// retried SET NX whose first reply was lost would look like a lock held by
// someone else. The node itself sends a call again, at once, within its
// context and the network timeout its first send had (driver.Queuer), only when it failed because the server had closed or reset
// the connection (end of file, a reset, a broken pipe; not a timeout, not
// an error reply): the client learns that the server closed its connection
// (a restart, CLIENT KILL) only when it reads its end, which a call sent
// just then fails with, and a release right after the servers dropped the
// connections would otherwise fail on every node, and a TryLock with them.
// The repeat goes on a new connection, once more if the one it was sent on
// had been closed too (a node of one server has two, its client's and its
// lane's, and a server that closes them closes both), the scripts (release, extend, TTL,
// fencing) as they are, since they compare the lock's value first, and a
// SET NX as driver.SetNXAgainScript, which also counts as set a key that
// already holds the call's value: a plain SET NX repeated after a first that
// the server ran would be refused, which the library reads as a key never
// set. A repeated release that deletes nothing counts as the failed first
// send (its outcome unknown), since the first may have deleted the key. A
// server that stays down fails the repeat at its dial. A cluster node
// resends nothing.
//
// A node of one server opened by address sends a lone call (no other in flight
// on the node, none in the last 10 ms) due within 250 ms (as every call is with the default
// node timeout, at most 200 ms) on a second connection, its lane: a second valkey-go client that
// does not pipeline, so that the call writes its command and reads the reply
// on the caller's goroutine, as a default valkey-go client does for a lone
// call, without the two hand-offs to the pipelining client's goroutines. The
// lane carries one call at a time: a call that finds it busy goes through the
// pipelining client, so that no call ever waits behind another's reply, and a
// canceled call on the lane returns at its deadline at the latest (at most 250
// ms later). The lane is made in the background after the first such call, and
// made again after its connection failed; a node whose calls are all due later
// (a node timeout above 250 ms), a cluster node and a node from [New] have
// none.
//
// A node hands at most 64 commands at once to its client, and to a far
// server 64 per millisecond of its fastest reply (once 8 round trips one
// after the other were timed, from 2 ms up: about 640 for a server 10 ms
// away, at most 1,024, which is what a client's ring holds by default; its
// driver.Queuer queue holds the others, urgent extensions first, for as long
// as their contexts allow), so that the node
// timeout bounds a command's time on the network rather than its wait behind
// thousands handed over at once, and a far server is not held to the
// throughput of 64 commands per round trip; a call
// due within 245 ms notices a cancellation by its deadline at the latest (its
// deadline is shared with the calls due within the same 5 ms, rounded up to
// them, never past its caller's); a node from [New] gives its client the
// caller's own context.
//
// [New] wraps a client the caller configured and keeps owning.
//
// Nodes also keep fencing counters (driver.Fencer, for redlock.WithFencing)
// and publish their releases (driver.Notifier): a waiter in redlock's Lock
// subscribes to the key's releases and retries as soon as the holder unlocks.
// All the subscriptions of a node share one dedicated connection of its client
// (Dedicate, with pub/sub hooks), made on the first Subscribe and closed by
// the node's Close.
// Close does not wait for it while it is being dialed, nor for a stalled
// server to answer the PING that the library's Close of it sends: on a client
// of yours (New), whose connections the node cannot break, that dial ends in
// the background, bounded by the client's dial timeout, and the connection it
// makes is closed; that closing ends in the background too, within a second.
// If the
// connection breaks, the node makes a new one itself (50ms later, then at
// doubling intervals up to 1s while it cannot connect, or while its new
// connections break before the server confirms a subscription on them), or
// the next Subscribe does at once; the new one also subscribes the earlier subscriptions again,
// and until then their waiters poll. A node that is a Redis Cluster
// subscribes on a dedicated connection per shard instead (sharded pub/sub),
// and follows a channel whose slot moves, or whose shard's primary a
// failover replaced; a shard whose connection breaks is reconnected without
// waiting for a Subscribe.
//
// A Redis Cluster is one node with an address
// "redis://host:port?cluster=true&addr=host2:port2" (the URL's host and every
// addr are seeds): the node opens a cluster client (ForceSingleClient off) and
// connects to every primary while it creates it, waiting at most 500ms more
// for those that do not answer once a node has given it the slot map: a
// shard down at the first call fails its own keys' calls alone (a server
// that is not cluster-enabled fails every call, "cluster support disabled",
// rather than being taken as one server); a command whose slot moved may fail with MOVED
// or TRYAGAIN, like any node failure, and is never resent. Once created, a
// cluster client is kept: a connection it loses it dials again itself (the
// library's own refresh follows a failover), each call runs on a goroutine of
// the node's so that one waiting for that dial returns by its context, and a
// call's probe that gets no answer breaks the connections to the primary of
// the call's slot alone: the other shards' calls go on while one shard's
// primary is down or hung (as long as the servers serve them: under Redis'
// default cluster-require-full-coverage, not once the cluster marked the
// shard failed, see the README). [New] takes a cluster client too. A node of one
// server (an address without cluster=true, or [New] over a client that is
// not a cluster client) follows no redirection: a server of a Redis Cluster
// of several shards given so answers MOVED (ASK) for the keys of its other
// nodes' slots, an error that retrying cannot fix, which says so
// (driver.ErrClusterServer, see driver.OneServerError).
//
// Before it creates the client of an address that gives several seeds, the
// node asks each of them, at once, for CLUSTER SLOTS, on a connection of
// its own: if two seeds that answer name no node ID in common (nodes of two
// clusters, of which the library would lock on the one whose seed answered
// first), every call on the node fails with an error that names the two and
// matches driver.ErrSeedsOfTwoClusters, which retrying cannot fix. A seed
// that does not answer within 5s is skipped, and the client, which keeps
// its seeds among the servers it asks for the map, connects to it later
// only once it answered and agrees. A client of New's is not checked: the
// client does not tell its seeds (Nodes leaves out those outside its slot
// map), and has read its map, from one of them, when it is made. Asking its
// Nodes for CLUSTER MYID (or CLUSTER NODES) at the node's first use, to
// check that they are one cluster, was weighed and not built, as it cannot
// fail: Nodes are the nodes of that map, which one server answered and
// which names its own cluster's nodes alone, so they are always one
// cluster, whichever the client happened to read (TestNewClusterNodesOfOneMap:
// over seeds of two clusters, every client's Nodes are one cluster's, the
// other's seed not among them). Two clients over the same seeds of two
// clusters could each pass it on a different cluster. Keeping the IDs seen
// then and comparing them at later uses would see only a later switch (a
// refresh answered by a seed of the other cluster, kept hidden among the
// servers the client asks), after locks may have been granted on it, and
// not a client that read the other cluster from the start. Give New a
// client of one cluster's seeds, or use Open, which asks every seed.
package valkeygo
