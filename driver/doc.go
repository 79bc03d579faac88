// Package driver defines the interfaces a Redis client must implement to be
// used by package redlock, in the way database/sql/driver serves database/sql.
//
// The Redlock algorithm lives in package redlock and talks to each Redis master
// only through a [Node]. Most code should use package redlock; this package is
// for driver authors.
//
// # Checklist for driver authors
//
// A [Node] is one independent Redis master. Every method must honour these rules;
// the conformance package checks them: conformance.Run for any Node, and
// conformance.RunRedis, which also runs Run, for a Redis driver against real
// servers, including down and stalled ones.
//
//   - Results have exactly three meanings. (true, nil): the command was applied.
//     (false, nil): it was definitely not applied, because the key is held by
//     another value (SetNX) or is not held by this value (EvalRelease, Extend).
//     A non-nil error: the outcome is unknown; the command may or may not have been
//     applied (a reply lost on the way back looks like this). Never return
//     (false, nil) for a failure you cannot explain, nor from SetNX for a key
//     that holds the caller's value because the same call set it (a resend of
//     its own): redlock takes a refusal as definite (it sends no release to a
//     node that refused an attempt), so a SET NX whose reply was lost is never
//     sent again as it was (it would find the caller's own key and answer
//     false), only as [SetNXAgainScript] (see below). (redlock sends each value
//     in one SetNX per node: a plain SET NX, which answers false for a key that
//     an earlier call set to the same value, is right for a call on its own.)
//   - SetNX is one atomic command, SET key value NX PX ttl. Never SETNX followed by
//     EXPIRE: a crash between the two leaves a key that never expires.
//   - EvalRelease and Extend run the scripts in this package ([ReleaseScript],
//     [ExtendScript]) with KEYS[1]=key and ARGV[1]=value (and ARGV[2]=ttl in
//     milliseconds for Extend), through EVALSHA with a fallback to EVAL when the
//     server answers NOSCRIPT. A client-side GET, compare, DEL is not atomic and is
//     not allowed.
//   - Each call runs ONE command that touches a key: one SET NX PX, or one script
//     (an EVALSHA answered NOSCRIPT runs nothing, so EVALSHA then EVAL is one).
//     Two scripts with a compare on the client between them (GET, then DEL) are
//     no more atomic than two commands. MULTI/EXEC is not allowed, even around the
//     one SET NX PX: a transaction cannot make one command depend on another's
//     reply (the compare needs a script), and around one command it adds nothing.
//     conformance.RunRedis checks all of this with MONITOR.
//   - TTLs are sent in milliseconds. A TTL below one millisecond is rounded up to one.
//   - Keys and values are bytes, not text: send them unchanged, a NUL byte or
//     invalid UTF-8 included.
//   - Every call honours its context: when ctx is done the call returns promptly
//     with an error for which errors.Is(err, ctx.Err()) is true. [ContextError]
//     makes a client's error (a socket timeout, say) into one. A call whose
//     context has no deadline must still end on a server that never answers,
//     by the node's own timeouts (a read timeout), also a call it pipelines.
//   - Methods are safe for concurrent use by multiple goroutines. (The
//     conformance suite calls them at once; run it with -race, since only the
//     race detector reports a data race.)
//   - A node must not fail or block at construction because its server is down or
//     never answers; it connects on use and reconnects after failures. A
//     connection that the server closed while it sat idle (a restart, CLIENT
//     KILL, the server's timeout) must not fail the next call either: check an
//     idle connection before reusing it, with a read whose deadline is a
//     moment ahead (a deadline already past fails before it reads) that must
//     time out rather than return end of file. A call that fails on a
//     connection the server closed before any reply came may go again, once,
//     on a new one: the scripts as they are, a SET NX only as
//     [SetNXAgainScript] (a plain SET NX repeated after a first that ran
//     would be refused, and a refusal must mean the key was never ours).
//   - An address's TLS (rediss://, [Config].TLS) verifies the server's name,
//     the address's host unless the tls.Config sets ServerName. With TLS 1.3
//     a server that requires a client certificate the node lacks closes the
//     connection only after the handshake, and the node sees a reset or end
//     of file: say in the error that the server asked for a certificate and
//     none was given (tls.Config.GetClientCertificate tells whether it asked);
//     conformance.RunRedis wants the word "certificate".
//   - A server that refuses a new connection with an error reply and closes
//     it (at its maxclients limit: "-ERR max number of clients reached")
//     must be named in the call's error, not only the broken pipe or end of
//     file the client meets next; over TLS, where a server at maxclients
//     closes the connection without a word, the error names maxclients as
//     the likely cause. conformance.RunRedis checks both.
//   - Keep the client's error in the chain of the error returned (wrap it with
//     %w): [PermanentCode] finds a server's error reply there (WRONGPASS,
//     NOPERM, READONLY, ...), and redlock stops retrying on such errors. A
//     node that is one server, rather than a Redis Cluster, passes its errors
//     through [OneServerError], which makes a cluster's redirection (MOVED,
//     ASK: the server is a cluster's node) such an error and says why.
//   - Errors and String must never contain a password or a lock value. A node
//     that implements fmt.Stringer is named by it in error messages; return the
//     address with credentials removed.
//   - Close releases the node's connections. Calls after Close return
//     [ErrClosed] or an error wrapping it, and so do the calls still waiting
//     in the node's local queue (see [Queuer]), which are never sent, also
//     when the node's client is the user's and stays open. An error that
//     matches ErrClosed says the call was never sent: a call already sent
//     when Close cut its connection has an unknown outcome, and its error
//     must not match ErrClosed. Close may be called more than once, also
//     from several goroutines at once amid calls: a Close that is not the
//     first does nothing more and returns nil, and so does the first when
//     closing went well (a client library's own Close often errs the second
//     time; conformance.Run checks a second Close, and conformance.RunRedis
//     three at once amid calls). A node over a nil client is the
//     exception: its every Close errs (see the last rule).
//   - The optional interfaces obey the same rules. [Fencer]'s SetNXFence and
//     RaiseFence and [Notifier]'s ReleaseNotify run [SetNXFenceScript],
//     [RaiseFenceScript] and [ReleaseNotifyScript] as above, and [TTLer]'s TTL
//     runs [TTLScript], with the KEYS and ARGV their documentation gives; SetNXFence parses the counter as a uint64
//     (up to 2^64-1), and an unexpected reply is an error. Subscribe listens on
//     [ReleaseChannel](key) with SSUBSCRIBE; it returns only once the server has confirmed the
//     subscription, or with an error when ctx ends first; it never blocks on a
//     send, and sends nothing after cancel returns. Keep it cheap per waiter:
//     share one pub/sub connection per node among all subscriptions, made on
//     first use and again after it breaks, with SSUBSCRIBE for a channel's
//     first waiter and SUNSUBSCRIBE after its last (on a Redis Cluster, one
//     connection per shard). Redis 7.0 is the minimum: on an older server
//     releases still succeed, unannounced, and Subscribe fails. Close closes that connection and
//     ends its goroutines. conformance.Run tests a node's optional interfaces
//     when it has them.
//   - Register the driver from an init function in its package, and also offer a
//     constructor over a client the caller configured. Given a nil client, the
//     constructor must not panic: every call on its node, and Close, return an
//     error that says so and matches ErrNilClient (errors.Is), so that Lock
//     stops at once rather than retrying what no retry can fix.
package driver
