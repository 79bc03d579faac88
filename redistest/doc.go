// Package redistest starts and controls real redis-server processes for
// tests, in the spirit of net/http/httptest.
//
// Every server listens on a loopback address only, 127.0.0.1 (or ::1 with
// [WithIPv6]), on a free port picked at start (never
// 6379), with its own temporary directory, no RDB snapshots and no AOF unless
// asked for. Tests use [NewServer] or [NewServers], which register the cleanup
// and skip (or, when the CI environment variable is set to anything but
// "false" or "0", fail) if redis-server is not installed, and skip under go
// test -short (a fast loop without servers); other code, such as a demo
// command, uses [Start] and [Server.Close].
//
// A [Server] can be stopped ([Server.Kill]) or frozen ([Server.Pause],
// [Server.Resume]) to inject faults, and started again on the same port and
// directory ([Server.Restart] at once, [Server.RestartAfter] after a delay),
// remembering only what its configuration made durable (AOF with
// appendfsync always, or nothing by default). [Server.Unread] tells what a
// paused server has queued, and [Server.Do] is a tiny built-in RESP2 client
// so that tests can inspect and change keys without a Redis driver.
//
// [NewSilent] (or [ListenSilent]) stands for a hung server without
// redis-server: a loopback TCP listener that accepts connections, reads what
// they send and never answers, counting the connections it accepted.
// [ClosedAddrs] gives distinct loopback addresses on which nothing listens,
// nodes that are down (connection refused); [DownAddrs] gives ones that stay
// down for the whole test, their ports held so that no server started
// meanwhile can take them.
//
// Network faults (latency, cut connections, lost replies) are the business of
// the fault proxy in the repository's safety module, which keeps its heavy
// dependencies out of this module.
//
// # Redis Cluster
//
// [NewCluster] and [StartCluster] start a real Redis Cluster: cluster-enabled
// servers, each with its nodes.conf in its own temporary directory, the 16384
// hash slots split among the shards' primaries, optional replicas
// ([WithReplicas]), a password or TLS ([WithServerOptions]), and every node
// agreeing on the slot map before it returns. [Cluster.MigrateSlot] moves a slot and its keys to another shard
// (after which the old owner answers -MOVED); [Cluster.StartMigration] leaves
// a slot half migrated, keys moved on demand ([Migration.MoveKeys]), so that
// clients meet -ASK, until [Migration.Finish]. [Cluster.SetAnnouncePort]
// makes a shard announce a proxy in front of it (the safety module's faultproxy, say), so that clients that
// follow the slot map go through the proxy. [KeySlot] computes a key's slot,
// and [Cluster.KeyOn] finds a key that a given shard serves.
//
// The redis-server binary is taken from the REDISTEST_SERVER environment
// variable if set, else from PATH; see [InstallHint]. On Linux a server is
// killed when the process that started it dies, so it never outlives the test
// binary; on Linux the directory of a server whose test binary died without
// cleaning up (ended by go test -timeout, say) is removed by a later [Start]
// in another process, once a minute old.
package redistest
